// How a global batch of micro-batches is split over workers of different speeds, so that they
// finish a step together (LB-BSP): the split that the speed and goodput policies and the PPO
// agent's job scope send. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

namespace tteps::scheduler {

// Integer accumulations in proportion to 1 / seconds_per_micro_batch[i] that sum to `total`
// (largest remainders), each within [lo, hi] (the sum then as close to `total` as the bounds
// allow). `extra[i]` (empty: none): micro-batches worker i computes besides its share (a lost
// worker's slice); the shares then even out share + extra in time.
std::vector<int64_t> SpeedShares(const std::vector<double>& seconds_per_micro_batch, int64_t total,
                                 int64_t lo, int64_t hi, const std::vector<double>& extra = {});

}  // namespace tteps::scheduler
