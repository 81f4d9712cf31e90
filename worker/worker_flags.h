// The worker's flags (data, model, training), turned into option structs. Torch-free.
#pragma once

#include <gflags/gflags.h>

#include "worker/dataset.h"
#include "worker/deeptte/model_config.h"
#include "worker/ring_options.h"
#include "worker/train_options.h"

DECLARE_string(stats);
DECLARE_int32(threads);
DECLARE_int64(accumulation);
DECLARE_int64(first_worker_batch);
DECLARE_int64(slowdown);
DECLARE_int32(slowdown_worker);

namespace tteps {

DatasetOptions DatasetOptionsFromFlags();
deeptte::ModelConfig ModelConfigFromFlags();
TrainOptions TrainOptionsFromFlags();
RingOptions RingOptionsFromFlags();

}  // namespace tteps
