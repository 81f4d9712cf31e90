// One step's gradient noise estimate (common/gradient_noise.h): the first micro-batch's
// gradient against the whole step's, two batch sizes on the same weights.
//
// In the optimizer's geometry. Plain SGD (and momentum) moves the weights along the gradient,
// so the noise that a larger batch averages away is the plain gradient's. Adam moves each
// weight by its gradient over the root of its running second moment, so there the noise that
// matters is that of the preconditioned gradient P g, P = 1 / (sqrt(v_hat) + eps): Pollux
// (OSDI 2021) measures Adam's noise scale so. The servers hold the optimizer's moments, so each
// worker keeps its own v of the per-trip mean gradient of its slice, with Adam's beta2, eps and
// bias correction (its slice's mean is noisier than the job's, so its v is somewhat larger).
// A step is measured with the v of the steps before it: P then does not depend on the step's
// own gradient, so E|P g_B|^2 = B^2 |P G|^2 + B tr(P Sigma P) holds as for the plain gradient
// and the estimate's formulas apply unchanged. (Dividing by a v that holds the step's own
// gradient blows up wherever that gradient nearly cancels.) Weights with no second moment yet
// (an embedding row no earlier step used) are left out.
// Adam's preconditioned norms fall by orders of magnitude over the first steps, while v catches
// up with the gradient, so an average of raw estimates would be the first steps' alone: each
// step's estimate is given in units of the earlier measured steps' mean gradient
// |P g|^2 / trips^2 (a running average; the step's own would correlate with its estimate and
// bias it), so that every step weighs alike. The noise scale, their ratio, is unchanged. The third
// step is the first measured.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/gradient_noise.h"

namespace tteps {

class StepNoiseMeter {
 public:
  // adam: in Adam's geometry with its beta2 and eps; otherwise the plain gradient's (SGD,
  // momentum, or --noise_geometry plain).
  StepNoiseMeter(bool adam, double beta2, double eps) : adam_(adam), beta2_(beta2), eps_(eps) {}

  // After the step's first micro-batch, with its gradient (of `trips` trips) in the model's.
  void FirstMicroBatch(torch::nn::Module& model, int64_t trips);
  // After the step's last micro-batch (the step's gradient, summed over `trips` trips, in the
  // model's): the estimate, if the step had two micro-batches or more and it came out finite.
  // Adam: then folds the step's gradient into v (a measured step's always; of steps of one
  // micro-batch, every eighth, standing for the steps since the last fold).
  std::optional<NoiseEstimate> EndOfStep(torch::nn::Module& model, int64_t trips);

 private:
  // Σ over the model's gradients of |P g|^2 (|g|^2 in the plain geometry), in double.
  double SquaredNorm(torch::nn::Module& model) const;
  // v <- beta2^steps v + (1 - beta2^steps) (g / trips)^2, counted as `steps` updates.
  void FoldIntoSecondMoment(torch::nn::Module& model, int64_t trips, int64_t steps);

  const bool adam_;
  const double beta2_, eps_;
  // Adam, per parameter: the running E[(g / trips)^2] and the steps folded into it (a parameter
  // gets both with its first gradient; until then it is left out).
  std::vector<torch::Tensor> v_;
  std::vector<int64_t> updates_;
  int64_t unfolded_ = 0;  // Adam: steps with trips since the last fold into v
  double unit_ = 0;       // Adam: the earlier measured steps' |P g|^2 / trips^2, a running average
  double first_sq_ = 0;   // the first micro-batch's |P g|^2
  int64_t first_trips_ = 0;
};

}  // namespace tteps
