#include "worker/step_noise.h"

#include <cmath>

#include "worker/gradient_step.h"

namespace tteps {

namespace {

// The unit's running average forgets quickly: it follows the norms' fall over the first steps.
constexpr double kUnitDecay = 0.8;
// A stretch of unmeasured steps (one micro-batch each) is folded into Adam's v once per this many.
constexpr int64_t kFoldEvery = 8;

}  // namespace

double StepNoiseMeter::SquaredNorm(torch::nn::Module& model) const {
  if (!adam_) return GradientSquaredNorm(model);
  torch::NoGradGuard no_grad;
  torch::Tensor total;
  const auto params = model.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    const torch::Tensor& g = params[k].grad();
    if (!g.defined() || k >= v_.size() || !v_[k].defined()) continue;  // no v yet: left out
    const double correction = 1.0 - std::pow(beta2_, static_cast<double>(updates_[k]));
    // In the gradient's own precision; only the sum is taken in double.
    const torch::Tensor root = (v_[k] / correction).sqrt_().add_(eps_);
    const auto sq =
        torch::where(v_[k] > 0, g / root, torch::zeros_like(g)).square().sum(torch::kDouble);
    total = total.defined() ? total + sq : sq;
  }
  return total.defined() ? total.item<double>() : 0.0;
}

void StepNoiseMeter::FirstMicroBatch(torch::nn::Module& model, int64_t trips) {
  // Adam's first step has no v to divide by: nothing to measure.
  if (adam_ && v_.empty()) return;
  first_sq_ = SquaredNorm(model);
  first_trips_ = trips;
}

std::optional<NoiseEstimate> StepNoiseMeter::EndOfStep(torch::nn::Module& model, int64_t trips) {
  std::optional<NoiseEstimate> estimate;
  // Only a measured step (two micro-batches or more) takes the step's norm, and only such steps
  // move the unit: a step of one micro-batch would pay a full pass of the preconditioned norm
  // for nothing (at micro-batches of 16 trips the meter cost a policy job a fifth of its
  // throughput while the accumulation stayed 1). After a stretch of such steps the unit is the
  // last measured steps'; the noise scale, a ratio, does not depend on it.
  const bool measured = first_trips_ > 0;
  const double step_sq = measured ? SquaredNorm(model) : 0.0;
  if (measured) {
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
  if (measured && adam_ && trips > 0 && step_sq > 0 && std::isfinite(step_sq)) {
    const double unit = step_sq / (static_cast<double>(trips) * static_cast<double>(trips));
    unit_ = unit_ > 0 ? kUnitDecay * unit_ + (1 - kUnitDecay) * unit : unit;
  }
  if (adam_ && trips > 0) {
    // A step of one micro-batch is folded into v only every kFoldEvery-th time, as the steps
    // since the last fold at once (decay beta2^n, weight 1 - beta2^n, n of them counted for the
    // bias correction): v averages ~1/(1 - beta2) steps, so a sample of them estimates it as
    // well, and a job that stays at accumulation 1 does not pay a pass over every weight each
    // step for a second moment it reads only once it accumulates (that pass cost a policy job at
    // accumulation 1 about 5 % of its compute at micro-batches of 16 trips).
    ++unfolded_;
    if (measured || v_.empty() || unfolded_ >= kFoldEvery) {
      FoldIntoSecondMoment(model, trips, unfolded_);
      unfolded_ = 0;
    }
  }
  return estimate;
}

void StepNoiseMeter::FoldIntoSecondMoment(torch::nn::Module& model, int64_t trips, int64_t steps) {
  torch::NoGradGuard no_grad;
  const auto params = model.parameters();
  v_.resize(params.size());
  updates_.resize(params.size(), 0);
  const double per_trip = 1.0 / static_cast<double>(trips);
  const double decay = std::pow(beta2_, static_cast<double>(steps));
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& g = params[i].grad();
    if (!g.defined()) continue;
    if (!v_[i].defined()) v_[i] = torch::zeros_like(g);
    v_[i].mul_(decay).addcmul_(g, g, (1.0 - decay) * per_trip * per_trip);
    updates_[i] += steps;
  }
}

}  // namespace tteps
