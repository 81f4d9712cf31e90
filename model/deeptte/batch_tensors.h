// A PaddedBatch wrapped as tensors for the model.
#pragma once

#include <torch/torch.h>

#include "model/data/padded_batch.h"

namespace tteps::deeptte {

struct BatchTensors {
  torch::Tensor driver_id, week_id, time_id;  // [B] int64
  torch::Tensor dist;                         // [B] normalised total distance
  torch::Tensor label;                        // [B] travel time, seconds
  torch::Tensor lngs, lats;                   // [B, T] normalised
  torch::Tensor states;                       // [B, T] int64 (0/1)
  torch::Tensor time_gap, dist_gap;           // [B, T] raw cumulative seconds / km
  torch::Tensor lengths;                      // [B] int64, points per trip
  // The shortest trip's points, known on the host (-1: read from `lengths`, a device sync).
  int64_t min_length = -1;
  int64_t size() const { return lengths.size(0); }
};

// Copies the batch into tensors on `device`; floating fields get `dtype` (kDouble for gradient
// checks). To a GPU through pinned memory, asynchronously on the current stream, in one copy
// per element type.
BatchTensors ToTensors(const data::PaddedBatch& batch, torch::Dtype dtype = torch::kFloat,
                       torch::Device device = torch::kCPU);

}  // namespace tteps::deeptte
