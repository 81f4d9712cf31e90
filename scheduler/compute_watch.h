// Workers inside a long step. Every worker's heartbeat says whether it computes
// (common/busy_peers.h); the scheduler's answers name those that do, so that the waits of the
// others (held pulls, replies, the ring) know the peer they wait for is busy, not gone. A step
// computed for longer than --timeout_s is named (a warning and a "long_step" metrics record once
// per --timeout_s it goes on), and one computed for longer than --step_timeout_s fails the job:
// a computation that never ends must not hold the job forever either.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/clock.h"

namespace tteps::scheduler {

class ComputeWatch {
 public:
  // `name_after_s`: a step computed this long is named (then again every as long); `limit_s`:
  // one computed this long fails the job (0: no limit).
  ComputeWatch(double name_after_s, double limit_s)
      : name_after_s_(name_after_s), limit_s_(limit_s) {}

  // A heartbeat of `worker` saying which step it computes (-1: none).
  void Heard(int worker, int64_t step, Clock::time_point now);
  // A lost worker computes nothing more.
  void Forget(int worker) { computing_.erase(worker); }
  // The workers whose last heartbeat said they compute, in order; how many; whether `worker` is.
  std::vector<int32_t> Computing() const;
  size_t count() const { return computing_.size(); }
  bool IsComputing(int worker) const { return computing_.count(worker) > 0; }

  struct LongStep {
    int worker = -1;
    int64_t step = -1;
    double computing_s = 0;
  };
  // The workers whose step has run past `name_after_s` since they were last named (each named
  // once per `name_after_s`).
  std::vector<LongStep> TakeLong(Clock::time_point now);
  // A worker whose step has run past the limit, if any.
  std::optional<LongStep> OverLimit(Clock::time_point now) const;

 private:
  struct Busy {
    int64_t step = -1;
    Clock::time_point since, named;
  };
  double name_after_s_, limit_s_;
  std::map<int, Busy> computing_;
};

}  // namespace tteps::scheduler
