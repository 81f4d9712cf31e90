#include "worker/exchange/local_optimizer.h"

#include "common/lr_schedule.h"
#include "worker/gradient_step.h"

namespace tteps {

LocalOptimizer::LocalOptimizer(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts)
    : model_(model), opts_(opts), optimizer_(MakeOptimizer(opts, model.parameters())) {}

void LocalOptimizer::Step(int64_t step, double trips) {
  ScaleGradients(model_, 1.0 / trips);
  if (opts_.clip_norm > 0) {
    torch::nn::utils::clip_grad_norm_(model_.parameters(), opts_.clip_norm);
  }
  const double lr = LearningRate(opts_, step);
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  optimizer_->step();
}

}  // namespace tteps
