#include "worker/exchange/local_optimizer.h"

#include "common/lr_schedule.h"
#include "worker/gradient_step.h"

namespace tteps {

LocalOptimizer::LocalOptimizer(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                               std::unique_ptr<AdaScale> adascale)
    : model_(model),
      opts_(opts),
      optimizer_(MakeOptimizer(opts, model.parameters())),
      adascale_(std::move(adascale)) {}

void LocalOptimizer::Step(int64_t step, int64_t trips, const PieceNoise& pieces) {
  if (adascale_) gain_ = adascale_->Step(GradientSquaredNorm(model_), trips, pieces);
  const double lr = LearningRate(opts_, step) * gain_;
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  const double mean = 1.0 / static_cast<double>(trips);
  if (opts_.clip_norm > 0) {  // the clip's norm is the mean's
    ScaleGradients(model_, mean);
    torch::nn::utils::clip_grad_norm_(model_.parameters(), opts_.clip_norm);
    optimizer_->step();
    return;
  }
  StepOnScaledGradients(*optimizer_, model_, mean);
}

}  // namespace tteps
