// How one global batch is split over the workers (the seed paper's slicing rule): worker 0
// gets `first_worker_batch` trips (or an even share when it is negative), the rest is split
// evenly over the other workers and any remainder spread one by one over them. Every trip of
// the batch goes to exactly one worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tteps {

// Trips per worker for a batch of `batch` trips; the sizes sum to `batch`.
std::vector<int64_t> SliceSizes(int64_t batch, int workers, int64_t first_worker_batch = -1);

// The part of `batch` (indices) that belongs to `worker`.
std::vector<size_t> SliceFor(const std::vector<size_t>& batch, int workers, int worker,
                             int64_t first_worker_batch = -1);

}  // namespace tteps
