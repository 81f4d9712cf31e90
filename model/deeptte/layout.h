// DeepTTE's parameters as the flat layout the servers, the checkpoints and the fingerprint see,
// from the model's hyperparameters alone: names, shapes and order as LibTorch's
// named_parameters() lists them for DeepTTEImpl (model/deeptte/deeptte.h). Torch-free, for
// programs that speak the protocol without the model (bench/scale's simulated workers); a unit
// test holds it equal to LayoutOf(DeepTTE) for several configurations.
#pragma once

#include "model/deeptte/model_config.h"
#include "model/param_layout.h"

namespace tteps::deeptte {

ParamLayout LayoutFor(const ModelConfig& config);

}  // namespace tteps::deeptte
