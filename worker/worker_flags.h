// The worker's flags (data, model, training), turned into option structs. Torch-free.
#pragma once

#include "worker/dataset.h"
#include "worker/deeptte/model_config.h"
#include "worker/train_options.h"

namespace tteps {

DatasetOptions DatasetOptionsFromFlags();
deeptte::ModelConfig ModelConfigFromFlags();
TrainOptions TrainOptionsFromFlags();

}  // namespace tteps
