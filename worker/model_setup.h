// What every training process does before it trains: the device, checked before anything loads,
// and the model, initialised from the seed the same way on every process and device.
#pragma once

#include <torch/torch.h>

#include "common/job_config.h"
#include "model/data/norm_stats.h"
#include "model/deeptte/deeptte.h"

namespace tteps {

// The device this process trains on (--device, this rank's GPU); --deterministic set first.
torch::Device PrepareDevice(const TrainConfig& t);

// Initialised on the CPU from --seed (the same weights on every device), then moved.
deeptte::DeepTTE BuildModel(const JobConfig& c, const data::NormStats& stats, torch::Device device);

}  // namespace tteps
