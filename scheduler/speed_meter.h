// Each slice's compute seconds per micro-batch, as the policies that split a global batch by
// speed read them (speed, goodput and the agent's job scope). Torch-free.
//
// Read from the last step of a slice's latest window, and only if that step ran at the slice's
// current accumulation (a decision takes effect a step or two after the window it was made on,
// so the window after it may begin at the old one). Not smoothed: the time of a step varies by
// a factor of 3 with its trips and with what else the machine runs, but alike for every worker
// of a sync step (their ratio within a few per cent on the shipped and synthetic trips), so a
// round's split compares the workers on the same step and follows interference that comes and
// goes at once, where an average over windows would lag it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "scheduler/ppo/observation.h"

namespace tteps::scheduler {

class SpeedMeter {
 public:
  explicit SpeedMeter(size_t slices) : seconds_(slices, 0.0), fresh_(slices, false) {}

  // Measures `slice` from `r` if its last step ran at `alpha` micro-batches of its own (plus
  // r.extra adopted ones); false, and nothing measured, if not. A window without per-step
  // times counts as a whole when r.alpha == alpha.
  bool Observe(size_t slice, const ppo::WindowReport& r, int64_t alpha);

  double seconds(size_t slice) const { return seconds_[slice]; }  // 0: unknown
  // Measured since the last NewRound() (a slice never measured: false).
  bool fresh(size_t slice) const { return fresh_[slice]; }
  // Every slice waits for a new measurement before the next decision.
  void NewRound() { fresh_.assign(fresh_.size(), false); }
  // A slice's worker left or joined: what was measured of it no longer holds.
  void Forget(size_t slice) {
    seconds_[slice] = 0;
    fresh_[slice] = false;
  }

 private:
  std::vector<double> seconds_;
  std::vector<bool> fresh_;
};

}  // namespace tteps::scheduler
