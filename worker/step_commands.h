// What the scheduler asks of a worker's step loop, as one queue in the order it asked: the loop
// drains it at each step's start (and while a step's wait was cut short) and applies every
// command there. Torch-free.
#pragma once

#include <cstdint>
#include <optional>

#include "common/slice_schedule.h"

namespace tteps {

struct StepCommand {
  enum Kind {
    kStop,             // the time budget is spent (or --patience ran out): vote to stop
    kPause,            // --min_workers: too few workers live; wait before the next step
    kResume,           // enough workers again
    kSetAccumulation,  // an accumulation policy's decision: `accumulation` from the next draw
    kAdopt,            // sync and ring: compute lost worker `slice`'s slice beside the own one
    kRelease,          // sync: leave adopted `slice` to a joining worker
  };
  Kind kind = kStop;
  int slice = -1;
  int64_t accumulation = 0;
  // kAdopt: the slice's accumulation schedule (none: this worker's --accumulation throughout).
  std::optional<SliceSchedule> schedule;
};

}  // namespace tteps
