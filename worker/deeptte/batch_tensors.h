// A PaddedBatch wrapped as tensors for the model.
#pragma once

#include <torch/torch.h>

#include "worker/data/padded_batch.h"

namespace tteps::deeptte {

struct BatchTensors {
  torch::Tensor driver_id, week_id, time_id;  // [B] int64
  torch::Tensor dist;                         // [B] normalised total distance
  torch::Tensor label;                        // [B] travel time, seconds
  torch::Tensor lngs, lats;                   // [B, T] normalised
  torch::Tensor states;                       // [B, T] int64 (0/1)
  torch::Tensor time_gap, dist_gap;           // [B, T] raw cumulative seconds / km
  torch::Tensor lengths;                      // [B] int64, points per trip
  int64_t size() const { return lengths.size(0); }
};

// Copies the batch into tensors on `device`; floating fields get `dtype` (kDouble for gradient
// checks). To a GPU through pinned memory, asynchronously on the current stream.
BatchTensors ToTensors(const data::PaddedBatch& batch, torch::Dtype dtype = torch::kFloat,
                       torch::Device device = torch::kCPU);

}  // namespace tteps::deeptte
