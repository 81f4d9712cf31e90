// A peer that computes is not a silent one. A worker's heartbeat says whether it is inside a
// step's computation; the scheduler's answer to every heartbeat names the workers whose last
// heartbeat said so. A wait on other workers (a server holding a pull, a pull's reply, a ring's
// data) counts its deadline from its start or from the last time a worker it may wait for was
// seen computing, whichever is later: a long step (a huge batch, a slow machine) holds the others
// as long as it runs, while a peer that is gone (no heartbeat: the scheduler declares it lost) or
// a link that is broken (nobody computes) still ends the wait after --timeout_s.
#pragma once

#include <algorithm>
#include <cereal/types/vector.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/clock.h"

namespace tteps {

// A heartbeat's body (node -> scheduler).
struct HeartbeatBody {
  // A worker inside a step's forward and backward (or its slowdown): that step; -1: none.
  int64_t computing = -1;
  // The last membership view the node followed (common/view.h); -1: none yet.
  int64_t view = -1;
  // It was sent the changes from a view it does not hold (a message lost): send it the whole.
  bool want_view = false;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(computing, view, want_view);
  }
};

// The scheduler's answer to a heartbeat: which workers' last heartbeat said they compute. A
// worker only asks whether any other worker computes (one flag); a server asks for the workers
// its held pulls wait on (a bit per worker: at a thousand workers, 128 bytes an answer).
struct HeartbeatAck {
  bool others_computing = false;   // to a worker: another worker computes
  std::vector<uint8_t> computing;  // to a server: bit w % 8 of byte w / 8 set: worker w computes

  // The one format of `computing`, for both sides.
  void SetComputing(int worker) {
    const size_t byte = static_cast<size_t>(worker) / 8;
    if (computing.size() <= byte) computing.resize(byte + 1);
    computing[byte] |= static_cast<uint8_t>(1u << (worker % 8));
  }
  template <class F>
  void ForEachComputing(F f) const {
    for (size_t byte = 0; byte < computing.size(); ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        if (computing[byte] >> bit & 1) f(static_cast<int>(8 * byte) + bit);
      }
    }
  }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(others_computing, computing);
  }
};

// When a worker was last seen computing (by the scheduler's answers); the epoch of the clock when
// never. `worker` -1: any worker but the caller itself.
using BusySeen = std::function<Clock::time_point(int worker)>;

// The deadline of a wait that began at `start` with `timeout`: start + timeout, or later when
// `seen_at` (the last time a worker the wait is for was seen computing) + timeout is later.
inline Clock::time_point BusyDeadline(Clock::time_point start, Clock::duration timeout,
                                      Clock::time_point seen_at) {
  return std::max(start, seen_at) + timeout;
}

}  // namespace tteps
