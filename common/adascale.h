// AdaScale (Johnson et al., "AdaScale SGD", ICML 2020): a step over a batch of M trips, s = M/M0
// times the batch M0 that --lr was tuned for, takes the rate lr x r with the gain
//   r = (S/M0 + |G|^2) / (S/M + |G|^2) = (M/M0)(B + M0)/(B + M),   B = S/|G|^2,
// which lies between 1 (no noise: a larger batch is worth one step) and s (only noise: it is
// worth s steps). Adam's update does not grow with the gradient's size, so it takes r^0.5 (the
// square-root rule of adaptive optimizers, as Pollux's AdamScale). |G|^2 and S come from the
// pieces of each step (gradient_noise.h), averaged over the steps with a decay. Torch-free and
// deterministic: the servers and the local trainer fold the same numbers in the same order, so
// that sync mode still equals local training with it on.
#pragma once

#include <cstdint>
#include <memory>

#include "common/gradient_noise.h"
#include "common/job_config.h"

namespace tteps {

class AdaScale {
 public:
  // Each step's estimate counts `decay` times less at the next step.
  static constexpr double kDecay = 0.95;

  AdaScale(int64_t base_batch, double exponent);
  // Folds one step in (`total_sq`: the squared norm of its gradient SUM over `trips` trips;
  // `pieces`: its pieces') and returns the factor of that step's rate. 1 until a step has had
  // two pieces with trips; s^exponent while the averaged |G|^2 is not positive.
  double Step(double total_sq, int64_t trips, const PieceNoise& pieces);
  double last_gain() const { return last_gain_; }
  // The averaged estimates and their weight (a checkpoint keeps them: a resumed job continues
  // with the same gains).
  struct State {
    double grad_sq = 0, trace = 0, weight = 0;
    template <class A>
    void serialize(A& ar) {
      ar(grad_sq, trace, weight);
    }
  };
  State state() const;
  void Restore(const State& s);

 private:
  double base_batch_, exponent_;
  NoiseSum noise_;
  double last_gain_ = 1;
};

// The gain of a step of `trips` trips for the averaged `mean` (exposed for tests): see above.
double AdaScaleGain(const NoiseEstimate& mean, bool estimated, double trips, double base_batch);

// --lr_scaling adascale: the optimizer's AdaScale (`batch_size`: the job's, the base batch
// unless --lr_scaling_base says otherwise); null for --lr_scaling none.
std::unique_ptr<AdaScale> MakeAdaScale(const OptimizerConfig& c, int64_t batch_size);

}  // namespace tteps
