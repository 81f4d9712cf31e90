#include "common/gradient_noise.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tteps {

std::optional<NoiseEstimate> EstimateNoise(double small_sq, int64_t small, double big_sq,
                                           int64_t big) {
  if (small <= 0 || big <= small || !std::isfinite(small_sq) || !std::isfinite(big_sq)) {
    return std::nullopt;
  }
  const double bs = static_cast<double>(small), bb = static_cast<double>(big);
  // Squared norms of the mean gradients.
  const double gs = small_sq / (bs * bs), gb = big_sq / (bb * bb);
  NoiseEstimate e;
  e.grad_sq = (bb * gb - bs * gs) / (bb - bs);
  e.trace = (gs - gb) / (1.0 / bs - 1.0 / bb);
  return e;
}

std::optional<NoiseEstimate> EstimateNoiseFromPieces(double total_sq, int64_t trips,
                                                     const PieceNoise& pieces) {
  const double n = static_cast<double>(trips);
  const double spread = n * n - pieces.n2;  // 0 when one piece holds every trip
  if (trips <= 0 || !(spread > 0.5) || !std::isfinite(total_sq) || !std::isfinite(pieces.sq)) {
    return std::nullopt;
  }
  NoiseEstimate e;
  e.grad_sq = (total_sq - pieces.sq) / spread;
  e.trace = (total_sq - n * n * e.grad_sq) / n;
  return e;
}

double NoiseScale(const NoiseEstimate& mean) {
  if (!(mean.grad_sq > 0)) return std::numeric_limits<double>::quiet_NaN();
  return mean.trace / mean.grad_sq;
}

double NoiseScaleForDecision(const NoiseEstimate& mean) {
  if (!(mean.grad_sq > 0) && mean.trace > 0) return std::numeric_limits<double>::infinity();
  return NoiseScale(mean);
}

double StepProgress(StepModel model, double noise_scale, double batch) {
  if (!(batch > 0) || !std::isfinite(noise_scale)) return 0;
  const double phi = std::max(0.0, noise_scale);
  const double g = batch / (batch + phi);
  return model == StepModel::kScaledLr ? g : std::sqrt(g);
}

double StatisticalEfficiency(StepModel model, double noise_scale, double base_batch, double batch) {
  if (std::isnan(noise_scale) || !(batch > 0) || !(base_batch > 0)) return 1.0;
  if (std::isinf(noise_scale)) {
    // The limit of B_noise far beyond both batches: every trip alike with a scaled rate; with a
    // fixed Adam step, progress grows as sqrt(B).
    return model == StepModel::kScaledLr ? 1.0 : std::sqrt(base_batch / batch);
  }
  const double phi = std::max(0.0, noise_scale);
  if (model == StepModel::kScaledLr) return (phi + base_batch) / (phi + batch);
  return std::sqrt(base_batch * (base_batch + phi) / (batch * (batch + phi)));
}

void NoiseSum::Add(const NoiseEstimate& e, double weight) {
  grad_sq_ += weight * e.grad_sq;
  trace_ += weight * e.trace;
  weight_ += weight;
  grad_sq2_ += weight * e.grad_sq * e.grad_sq;
  trace2_ += weight * e.trace * e.trace;
  weight2_ += weight * weight;
}

void NoiseSum::Decay(double factor) {
  grad_sq_ *= factor;
  trace_ *= factor;
  weight_ *= factor;
  grad_sq2_ *= factor;
  trace2_ *= factor;
  weight2_ *= factor * factor;
}

NoiseEstimate NoiseSum::StandardError() const {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (!(weight2_ > 0)) return {nan, nan};
  const double samples = weight_ * weight_ / weight2_;
  if (!(samples > 1.0 + 1e-9)) return {nan, nan};
  const NoiseEstimate m = Mean();
  // Σ w (x - m)^2 = Σ w x^2 - m^2 Σ w, clamped at 0 against rounding.
  const auto se = [&](double sum2, double mean) {
    const double spread = std::max(0.0, sum2 - mean * mean * weight_);
    return std::sqrt(spread / ((samples - 1.0) * weight_));
  };
  return {se(grad_sq2_, m.grad_sq), se(trace2_, m.trace)};
}

double ResolvedNoiseScale(const NoiseSum& sum, double z) {
  NoiseEstimate m = sum.Mean();
  const NoiseEstimate se = sum.StandardError();
  if (std::isnan(se.trace) || !(m.trace > z * se.trace)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  // An unresolved |G|^2 counts as none: NoiseScaleForDecision's infinite scale.
  if (!(m.grad_sq > z * se.grad_sq)) m.grad_sq = 0;
  return NoiseScaleForDecision(m);
}

NoiseEstimate NoiseSum::Mean() const {
  if (weight_ <= 0) return {};
  return {grad_sq_ / weight_, trace_ / weight_};
}

}  // namespace tteps
