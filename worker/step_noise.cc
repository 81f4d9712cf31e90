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
  const double correction = 1.0 - std::pow(beta2_, static_cast<double>(updates_));
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    torch::Tensor g = grads[i];
    if (beta2_ > 0) {
      // In the gradient's own precision; only the sum is taken in double.
      const torch::Tensor root = (v_[i] / correction).sqrt_().add_(eps_);
      g = torch::where(v_[i] > 0, g / root, torch::zeros_like(g));
    }
    const auto sq = g.square().sum(torch::kDouble);
    total = total.defined() ? total + sq : sq;
  }
  return total.defined() ? total.item<double>() : 0.0;
}

void StepNoiseMeter::FirstMicroBatch(torch::nn::Module& model, int64_t trips) {
  // Adam's first step has no v to divide by: nothing to measure.
  if (beta2_ > 0 && updates_ == 0) return;
  first_sq_ = SquaredNorm(Gradients(model));
  first_trips_ = trips;
}

std::optional<NoiseEstimate> StepNoiseMeter::EndOfStep(torch::nn::Module& model, int64_t trips) {
  const auto grads = Gradients(model);
  std::optional<NoiseEstimate> estimate;
  const bool unit_wanted = beta2_ > 0 && updates_ > 0;  // Adam, with a v to divide by
  const double step_sq = first_trips_ > 0 || unit_wanted ? SquaredNorm(grads) : 0.0;
  if (first_trips_ > 0) {
    estimate = EstimateNoise(first_sq_, first_trips_, step_sq, trips);
    // Adam: in units of the earlier steps' mean gradient (their |P g|^2 / trips^2, averaged), so
    // that every step weighs alike in an average; a unit of this step's own would bias both.
    if (estimate && beta2_ > 0) {
      if (unit_ > 0) {
        estimate->grad_sq /= unit_;
        estimate->trace /= unit_;
      } else {
        estimate.reset();  // no earlier step to measure it by
      }
    }
  }
  first_trips_ = 0;
  if (unit_wanted && trips > 0 && step_sq > 0) {
    const double unit = step_sq / (static_cast<double>(trips) * static_cast<double>(trips));
    unit_ = unit_ > 0 ? kUnitDecay * unit_ + (1 - kUnitDecay) * unit : unit;
  }
  if (beta2_ > 0 && trips > 0) {
    torch::NoGradGuard no_grad;
    if (v_.empty()) {
      for (const auto& g : grads) v_.push_back(g.defined() ? torch::zeros_like(g) : g);
    }
    const double per_trip = 1.0 / static_cast<double>(trips);
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined() || !v_[i].defined()) continue;
      v_[i].mul_(beta2_).addcmul_(grads[i], grads[i], (1.0 - beta2_) * per_trip * per_trip);
    }
    ++updates_;
  }
  return estimate;
}

}  // namespace tteps
