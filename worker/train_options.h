// Training options shared by the local trainer and (later) the distributed workers.
#pragma once

#include <cstdint>
#include <string>

namespace tteps {

struct TrainOptions {
  std::string optimizer = "adam";  // adam | sgd | momentum
  double lr = 1e-3;
  double momentum = 0.9;    // for --optimizer=momentum
  int64_t batch_size = 64;  // trips per optimizer step (the global batch)
  int64_t epochs = 10;
  int64_t max_steps = 0;  // stop after this many steps; 0 = no limit
  uint64_t seed = 1;
  int64_t log_every = 10;   // steps between metrics lines
  int64_t eval_every = 0;   // steps between evaluations; 0 = once per epoch
  double eval_every_s = 0;  // seconds between evaluations; overrides eval_every when > 0
  double max_train_s = 0;   // time budget: training stops soon after this (0: no budget)
  int64_t eval_batch_size = 256;
  double progress_s = 5;  // seconds between progress lines
  double clip_norm = 0;   // clip each step's gradient to this global L2 norm (0: off)

  void Validate() const;  // throws std::invalid_argument naming the bad option
};

}  // namespace tteps

namespace tteps {

// Optimizer steps of a run over `num_trips` trips: epochs x ceil(num_trips / batch_size),
// capped by max_steps when set (max_steps alone when epochs < 1).
int64_t TotalSteps(const TrainOptions& opts, size_t num_trips);

}  // namespace tteps
