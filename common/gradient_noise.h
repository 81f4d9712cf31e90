// The gradient noise scale of McCandlish et al. ("An Empirical Model of Large-Batch Training",
// 2018, appendix A). The squared norm of a mean gradient over B trips has expectation
// |G|^2 + S / B, with G the true gradient and S = tr(Sigma) the per-trip gradient variance; two
// batch sizes give unbiased estimates of both, and B_noise = S / |G|^2 is the batch (in trips)
// above which a larger batch buys little. Estimates of one step are noisy (either can be
// negative): average |G|^2 and S separately over many steps, then divide. Torch-free.
#pragma once

#include <cstdint>
#include <optional>

namespace tteps {

struct NoiseEstimate {
  double grad_sq = 0;  // |G|^2, of the mean per-trip gradient
  double trace = 0;    // S = tr(Sigma), per trip
};

// `small_sq`: the squared norm of the SUM of per-trip gradients over `small` trips; `big_sq`
// over `big` trips that include them. Nothing unless big > small > 0 and both are finite.
std::optional<NoiseEstimate> EstimateNoise(double small_sq, int64_t small, double big_sq,
                                           int64_t big);

// B_noise = trace / grad_sq of averaged estimates; NaN while grad_sq is not positive.
double NoiseScale(const NoiseEstimate& mean);

// Sums estimates (optionally weighted) for their mean.
class NoiseSum {
 public:
  void Add(const NoiseEstimate& e, double weight = 1.0);
  // Multiplies every weight so far by `factor` (< 1: a decaying average).
  void Decay(double factor);
  double weight() const { return weight_; }
  NoiseEstimate Mean() const;

 private:
  double grad_sq_ = 0, trace_ = 0, weight_ = 0;
};

}  // namespace tteps
