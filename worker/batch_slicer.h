// How one global batch is split over the workers (the seed paper's slicing rule): worker 0
// gets `first_worker_batch` trips (or an even share when it is negative), the rest is split
// evenly over the other workers and any remainder spread one by one over them. Every trip of
// the batch goes to exactly one worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/data/batcher.h"

namespace tteps {

// Trips per worker for a batch of `batch` trips; the sizes sum to `batch`.
std::vector<int64_t> SliceSizes(int64_t batch, int workers, int64_t first_worker_batch = -1);

// Balanced slicing (--slicing balanced): contiguous parts of the batch (length-sorted, so that
// each part pads little) whose estimated compute is as even as possible. A part of n trips
// whose longest has L points costs L x (n + kSliceOverhead): the LSTM runs padded to L steps,
// and a step's fixed cost is worth about that many trips (measured with bench_train_throughput
// on one thread: 22 ms at batch 4, 34 ms at 16). Minimises the largest part's cost; every
// worker gets a trip while there are enough. `lengths`: the batch's trips' lengths, in order.
inline constexpr int64_t kSliceOverhead = 16;
std::vector<int64_t> BalancedSliceSizes(const std::vector<int64_t>& lengths, int workers);

// The part of `batch` (indices) that belongs to `worker`. With `trip_length` (a trip's length,
// by index) and no first_worker_batch: balanced slicing.
std::vector<size_t> SliceFor(const std::vector<size_t>& batch, int workers, int worker,
                             int64_t first_worker_batch = -1,
                             const data::TripLength& trip_length = {});

}  // namespace tteps
