#include "common/adascale.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tteps {

AdaScale::AdaScale(int64_t base_batch, double exponent)
    : base_batch_(static_cast<double>(base_batch)), exponent_(exponent) {
  if (base_batch < 1) throw std::invalid_argument("AdaScale needs a base batch of at least 1");
}

double AdaScaleGain(const NoiseEstimate& mean, bool estimated, double trips, double base_batch) {
  const double s = trips / base_batch;
  if (!estimated || !(trips > 0)) return 1.0;
  double r = s;  // |G|^2 not (yet) above its noise: all noise
  if (mean.grad_sq > 0 && mean.trace >= 0) {
    const double b = mean.trace / mean.grad_sq;
    r = (b / base_batch + 1.0) / (b / trips + 1.0);
  }
  return std::clamp(r, std::min(1.0, s), std::max(1.0, s));
}

double AdaScale::Step(double total_sq, int64_t trips, const PieceNoise& pieces) {
  if (const auto e = EstimateNoiseFromPieces(total_sq, trips, pieces)) {
    noise_.Decay(kDecay);
    noise_.Add(*e);
  }
  const double r =
      AdaScaleGain(noise_.Mean(), noise_.weight() > 0, static_cast<double>(trips), base_batch_);
  last_gain_ = std::pow(r, exponent_);
  return last_gain_;
}

AdaScale::State AdaScale::state() const {
  const NoiseEstimate sums = noise_.sums();
  return {sums.grad_sq, sums.trace, noise_.weight()};
}

void AdaScale::Restore(const State& s) { noise_.Restore({s.grad_sq, s.trace}, s.weight); }

std::unique_ptr<AdaScale> MakeAdaScale(const OptimizerConfig& c, int64_t batch_size) {
  if (c.lr_scaling == "none") return nullptr;
  if (c.lr_scaling != "adascale") {
    throw std::invalid_argument("unknown --lr_scaling '" + c.lr_scaling + "'");
  }
  return std::make_unique<AdaScale>(c.lr_scaling_base > 0 ? c.lr_scaling_base : batch_size,
                                    c.name == "adam" ? 0.5 : 1.0);
}

}  // namespace tteps
