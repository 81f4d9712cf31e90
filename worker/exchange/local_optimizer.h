// The optimizer step on the worker's own weights (the local, ring and averaging exchanges):
// the gradient sum becomes a mean, is clipped by its global norm, and LibTorch's optimizer
// steps at the schedule's rate (common/lr_schedule.h). The parameter-server exchange has none:
// there the servers step.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "common/adascale.h"
#include "common/job_config.h"
#include "model/deeptte/deeptte.h"

namespace tteps {

class LocalOptimizer {
 public:
  // `adascale` (local mode, --lr_scaling adascale): the rate's gain, from each step's pieces.
  LocalOptimizer(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                 std::unique_ptr<AdaScale> adascale = nullptr);
  // The model's gradients hold a sum over `trips` trips: divides, clips and steps with the rate
  // of the job's step `step` (0-based; the same on every worker, whether or not it had trips),
  // times AdaScale's gain for the step's `pieces` when on.
  void Step(int64_t step, int64_t trips, const PieceNoise& pieces = {});

 private:
  deeptte::DeepTTEImpl& model_;
  OptimizerConfig opts_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<AdaScale> adascale_;
  double gain_ = 1;
};

}  // namespace tteps
