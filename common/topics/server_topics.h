// The control messages between the scheduler and the servers: each topic of kReport and
// kCommand with its typed body (common/topic.h).
#pragma once

#include <cstdint>

#include "common/topic.h"
#include "common/topics/server_stats.h"

namespace tteps::server::topics {

// Server -> scheduler (sync mode with clipping): the squared norm of this server's part of
// version `version`'s aggregate.
struct NormPartial {
  int64_t version = 0;
  double squared = 0;
  template <class A>
  void serialize(A& ar) {
    ar(version, squared);
  }
};
inline constexpr Topic<NormPartial> kNormPartial{"norm-partial"};
// Scheduler -> servers: the global gradient norm of version `version`.
struct NormTotal {
  int64_t version = 0;
  double norm = 0;
  template <class A>
  void serialize(A& ar) {
    ar(version, norm);
  }
};
inline constexpr Topic<NormTotal> kNormTotal{"norm-total"};
// Scheduler -> servers: every membership change (workers lost, places taken by joiners, servers
// lost, a rollback's new map) comes as a view (common/view.h, topic "view").
// Server -> scheduler, at the end: its statistics.
inline constexpr Topic<ServerStats> kStats{"server-stats"};

}  // namespace tteps::server::topics
