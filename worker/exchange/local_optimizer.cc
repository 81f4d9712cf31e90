#include "worker/exchange/local_optimizer.h"

#include "worker/gradient_step.h"

namespace tteps {

LocalOptimizer::LocalOptimizer(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts)
    : model_(model),
      optimizer_(MakeOptimizer(opts, model.parameters())),
      clip_norm_(opts.clip_norm) {}

void LocalOptimizer::Step(double trips) {
  ScaleGradients(model_, 1.0 / trips);
  if (clip_norm_ > 0) torch::nn::utils::clip_grad_norm_(model_.parameters(), clip_norm_);
  optimizer_->step();
}

}  // namespace tteps
