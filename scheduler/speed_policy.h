// --accumulation_policy speed, after LB-BSP (SoCC 2020): each worker accumulates micro-batches
// in proportion to its measured speed, so that the workers finish a step together, while the
// sum over the workers (the global batch) stays W x --accumulation. Torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "scheduler/accumulation_policy.h"

namespace tteps::scheduler {

// `accumulation`: every worker's at the start. A new split is sent once every worker has
// reported a window since the last one, with steps at its current accumulation (the speeds of
// scheduler/speed_meter.h), and only where it shortens the predicted step (the slowest
// worker's accumulation x seconds per micro-batch) by more than 5%. After a loss the orphaned
// slices keep their accumulation and the others share the rest of the global batch, the
// adopters' extra micro-batches counted in their time.
std::unique_ptr<AccumulationPolicy> MakeSpeedPolicy(int workers, int64_t accumulation, int64_t lo,
                                                    int64_t hi);

}  // namespace tteps::scheduler
