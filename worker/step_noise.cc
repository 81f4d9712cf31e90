#include "worker/step_noise.h"

#include <cmath>

namespace tteps {

namespace {

// The unit's running average forgets quickly: it follows the norms' fall over the first steps.
constexpr double kUnitDecay = 0.8;

std::vector<torch::Tensor> Gradients(torch::nn::Module& model) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : model.parameters()) grads.push_back(p.grad());
  return grads;
}

}  // namespace

double StepNoiseMeter::SquaredNorm(const std::vector<torch::Tensor>& grads) const {
  torch::NoGradGuard no_grad;
  torch::Tensor total;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    torch::Tensor sq;
    if (!adam_) {
      sq = grads[i].to(torch::kDouble).square().sum();
    } else {
      if (i >= v_.size() || !v_[i].defined() || updates_[i] == 0) continue;  // no v yet
      const double correction = 1.0 - std::pow(beta2_, static_cast<double>(updates_[i]));
      // In the gradient's own precision; only the sum is taken in double.
      const torch::Tensor root = (v_[i] / correction).sqrt_().add_(eps_);
      sq = torch::where(v_[i] > 0, grads[i] / root, torch::zeros_like(grads[i]))
               .square()
               .sum(torch::kDouble);
    }
    total = total.defined() ? total + sq : sq;
  }
  return total.defined() ? total.item<double>() : 0.0;
}

void StepNoiseMeter::FirstMicroBatch(torch::nn::Module& model, int64_t trips) {
  // Adam's first step has no v to divide by: nothing to measure.
  if (adam_ && v_.empty()) return;
  first_sq_ = SquaredNorm(Gradients(model));
  first_trips_ = trips;
}

std::optional<NoiseEstimate> StepNoiseMeter::EndOfStep(torch::nn::Module& model, int64_t trips) {
  const auto grads = Gradients(model);
  std::optional<NoiseEstimate> estimate;
  const bool unit_wanted = adam_ && !v_.empty();  // Adam, with a v to divide by
  const double step_sq = first_trips_ > 0 || unit_wanted ? SquaredNorm(grads) : 0.0;
  if (first_trips_ > 0) {
    estimate = EstimateNoise(first_sq_, first_trips_, step_sq, trips);
    // Adam: in units of the earlier steps' mean gradient (their |P g|^2 / trips^2, averaged), so
    // that every step weighs alike in an average; a unit of this step's own would bias both.
    if (estimate && adam_) {
      if (unit_ > 0) {
        estimate->grad_sq /= unit_;
        estimate->trace /= unit_;
      } else {
        estimate.reset();  // no earlier step to measure it by
      }
    }
  }
  first_trips_ = 0;
  if (unit_wanted && trips > 0 && step_sq > 0 && std::isfinite(step_sq)) {
    const double unit = step_sq / (static_cast<double>(trips) * static_cast<double>(trips));
    unit_ = unit_ > 0 ? kUnitDecay * unit_ + (1 - kUnitDecay) * unit : unit;
  }
  if (adam_ && trips > 0) {
    torch::NoGradGuard no_grad;
    v_.resize(grads.size());
    updates_.resize(grads.size(), 0);
    const double per_trip = 1.0 / static_cast<double>(trips);
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) continue;
      if (!v_[i].defined()) v_[i] = torch::zeros_like(grads[i]);
      v_[i].mul_(beta2_).addcmul_(grads[i], grads[i], (1.0 - beta2_) * per_trip * per_trip);
      ++updates_[i];
    }
  }
  return estimate;
}

}  // namespace tteps
