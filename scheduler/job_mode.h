// What the scheduler asks of the job's consistency mode, answered here only. Adding a mode is
// this file, the workers' exchange factory (worker/exchange/make_exchange.cc), the servers'
// consistency where the mode uses servers (server/shard.h), and a test.
#pragma once

#include <string>

#include "common/job_config.h"
#include "common/mode.h"

namespace tteps::scheduler {

class JobMode {
 public:
  // `x`: the job's exchange settings (a ring goes on without a worker only over TCP links).
  // Throws std::invalid_argument for local mode, which runs without a scheduler.
  explicit JobMode(const ExchangeConfig& x);
  // A mode with its default links (the membership's unit tests).
  explicit JobMode(Mode mode);

  Mode mode() const { return mode_; }
  const char* name() const { return ModeName(mode_); }
  // The job has parameter servers (sync, async, SSP).
  bool servers() const { return UsesServers(mode_); }
  // The global batch is cut into slices that the live workers compute, a lost worker's adopted
  // by the others (sync, ring).
  bool slices() const;
  // A joiner takes a lost worker's place and its clock on the servers (async, SSP).
  bool places() const;
  // Steps in lockstep on the servers (sync): a joiner's slice is handed over at a step boundary,
  // the final weights are exactly the last version's, and the batch may have more slices than
  // workers.
  bool lockstep() const;
  // Why the job cannot go on without one of its workers; empty: it can (sync, async, SSP, and
  // the ring over TCP links).
  std::string WorkerLossRefusal() const;
  // Why the job takes no joiner; empty: it does (sync, async, SSP).
  std::string JoinRefusal() const;

 private:
  Mode mode_;
  bool ring_rebuilds_;  // our ring over TCP links: rebuilt without a lost worker
};

}  // namespace tteps::scheduler
