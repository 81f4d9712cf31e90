// DeepTTE's fixed sizes, and its hyperparameters' type (torch-free).
#pragma once

#include <cstdint>

#include "common/job_config.h"

namespace tteps::deeptte {

// The hyperparameters are part of the job's configuration (common/job_config.h).
using ModelConfig = tteps::ModelConfig;

// Sizes of the attribute embeddings, as in the paper.
inline constexpr int64_t kNumDrivers = 24000;
inline constexpr int64_t kNumWeekdays = 7;
inline constexpr int64_t kNumTimeSlots = 1440;
inline constexpr int64_t kAttrSize = 16 + 3 + 8 + 1;  // three embeddings + normalised distance
inline constexpr int64_t kHiddenSize = 128;           // LSTM width

}  // namespace tteps::deeptte
