// The scheduler's side of the nodes' heartbeats: every one is answered with the workers that
// compute now (common/busy_peers.h), and a step that runs long is named, then ends the job at
// --step_timeout_s (scheduler/compute_watch.h).
#pragma once

#include <string>

#include "common/transport.h"
#include "scheduler/compute_watch.h"
#include "scheduler/job_state.h"

namespace tteps::scheduler {

class Heartbeats {
 public:
  explicit Heartbeats(JobState& job);
  // A live node's heartbeat; a garbled body counts as not computing (and is logged).
  void OnHeartbeat(Node& node, const Message& m);
  // Names each step computed for longer than --timeout_s (once per --timeout_s: a warning and
  // a "long_step" metrics record); returns why the job fails (a step past --step_timeout_s),
  // empty otherwise.
  std::string CheckLongSteps();

 private:
  JobState& job_;
  ComputeWatch watch_;
};

}  // namespace tteps::scheduler
