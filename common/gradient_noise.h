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

// The gradient of one step cut into pieces (a slice's micro-batch each): Σ over the pieces of
// the squared norm of each piece's gradient SUM (sq) and of each piece's trips squared (n2).
struct PieceNoise {
  double sq = 0, n2 = 0;
  void Add(double piece_sq, int64_t trips) {
    sq += piece_sq;
    n2 += static_cast<double>(trips) * static_cast<double>(trips);
  }
};

// From one step's pieces: E|g_p|^2 = n_p^2 |G|^2 + n_p S for a piece of n_p trips, and the
// same for the whole step's sum g over N = Σ n_p trips, so Σ|g_p|^2 and |g|^2 (`total_sq`)
// give both unknowns. Nothing unless at least two pieces have trips (N^2 > Σ n_p^2).
std::optional<NoiseEstimate> EstimateNoiseFromPieces(double total_sq, int64_t trips,
                                                     const PieceNoise& pieces);

// B_noise = trace / grad_sq of averaged estimates; NaN while grad_sq is not positive.
double NoiseScale(const NoiseEstimate& mean);

// B_noise for a decision: as NoiseScale, but +infinity where the noise is measured (trace > 0)
// and the true gradient is not (grad_sq <= 0: below what the averaged estimates resolve), so
// every batch is far below B_noise and worth its full size (Adam's preconditioned gradient on
// the shipped sample); NaN where neither is known.
double NoiseScaleForDecision(const NoiseEstimate& mean);

// How a step's progress grows with its batch of B trips, given B_noise (in the optimizer's
// geometry), as a fraction of a noise-free step's:
//   kScaledLr: the learning rate scaled with the batch (AdaScale; the model of McCandlish et al.
//     and Pollux): B / (B + B_noise), so a trip is worth 1 / (B + B_noise).
//   kFixedAdamStep: Adam at a fixed learning rate, whose step has the rate's length whatever
//     the batch: the batch only sets how well the step points, the cosine between the batch's
//     and the true (preconditioned) gradient, sqrt(B / (B + B_noise)). A trip is then worth
//     1 / sqrt(B (B + B_noise)): a larger batch costs per trip even where B_noise is beyond it.
enum class StepModel { kScaledLr, kFixedAdamStep };

// As above, for a finite B_noise (a negative one counts as 0; else 0 is returned).
double StepProgress(StepModel model, double noise_scale, double batch);
// A trip's worth in a batch of `batch` trips relative to one in `base_batch` trips (1 at the
// base): (progress(B) / B) / (progress(B0) / B0). 1 where the noise scale is unknown (NaN).
double StatisticalEfficiency(StepModel model, double noise_scale, double base_batch, double batch);

// Sums estimates (optionally weighted) for their mean.
class NoiseSum {
 public:
  void Add(const NoiseEstimate& e, double weight = 1.0);
  // Multiplies every weight so far by `factor` (< 1: a decaying average).
  void Decay(double factor);
  double weight() const { return weight_; }
  NoiseEstimate Mean() const;
  // The standard error of Mean(), each Add one sample of its weight: the weighted spread
  // around the mean over the effective number of samples less one, (Σw)^2 / Σw^2 - 1. NaN in
  // both until that number exceeds 1. Not kept by Restore (a checkpoint needs only the mean).
  NoiseEstimate StandardError() const;
  // The raw sums, for a checkpoint (Restore takes them back).
  NoiseEstimate sums() const { return {grad_sq_, trace_}; }
  void Restore(const NoiseEstimate& sums, double weight) {
    grad_sq_ = sums.grad_sq;
    trace_ = sums.trace;
    weight_ = weight;
    grad_sq2_ = trace2_ = weight2_ = 0;
  }

 private:
  double grad_sq_ = 0, trace_ = 0, weight_ = 0;
  // Σ w x^2 of each part and Σ w^2, for StandardError.
  double grad_sq2_ = 0, trace2_ = 0, weight2_ = 0;
};

// B_noise for a decision from a running average, as NoiseScaleForDecision(sum.Mean()) where
// the average resolves what it claims: a trace not `z` standard errors above zero is no
// measured noise (NaN, unknown), and a |G|^2 not `z` of its standard errors above zero is an
// unresolved true gradient (infinite, if the noise is resolved). Single windows' estimates
// are noisy enough (live: from -30 to 1600 trips a window) that an unqualified mean of a few
// reads as a verdict it is not.
double ResolvedNoiseScale(const NoiseSum& sum, double z = 2.0);

}  // namespace tteps
