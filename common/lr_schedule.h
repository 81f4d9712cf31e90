// The learning rate of each optimizer step: --lr shaped by --lr_schedule and --warmup_steps.
// One function for every place that steps (the servers, the local trainer, the ring and
// averaging workers), so that sync mode still equals local training under a schedule.
#pragma once

#include <cstdint>

#include "common/job_config.h"

namespace tteps {

// The rate of step `step` (0-based: the number of steps taken before it). Warm-up: lr x
// (step + 1) / warmup_steps for the first warmup_steps steps; then constant (lr), cosine (lr x
// (1 + cos(pi t / T)) / 2, t the steps after warm-up, T = lr_steps - warmup_steps, 0 from T on)
// or step (lr x lr_decay ^ floor(t / lr_decay_every)).
double LearningRate(const OptimizerConfig& c, int64_t step);

}  // namespace tteps
