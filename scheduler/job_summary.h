// summary.json from what the coordinator gathered by the job's end: the work done (steps,
// trips, times, bytes), memory, the servers' statistics, what was refused, the evaluations and
// every membership event. A pure function of its inputs (tests/unit/scheduler/).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/json_writer.h"
#include "common/mode.h"
#include "common/topics/server_stats.h"
#include "scheduler/coordinator_options.h"
#include "scheduler/worker_book.h"

namespace tteps::scheduler {

struct JobFacts {
  const CoordinatorOptions* opts = nullptr;
  const WorkerBook* book = nullptr;
  const std::map<int, server::ServerStats>* server_stats = nullptr;
  std::string status;  // done, failed, interrupted
  std::string signal;  // interrupted: the signal's name
  std::string error;
  int servers = 0;  // the job's servers at its end (a rollback renumbers the live ones)
  int64_t steps = 0, steps_redone = 0;
  bool stopped_by_time_budget = false;
  double train_s = 0, wall_s = 0, startup_s = 0;
  // The scheduler's own peak memory (MB): resident, private, shared.
  double rss_mb = 0, private_mb = 0, shared_mb = 0;
  int64_t refused = 0;     // by the scheduler: malformed or unregistered messages
  int64_t decisions = -1;  // the accumulation policy's (-1: no policy)
  std::string policy_error;
  std::string policy_record;                      // AccumulationPolicy::Record (empty: none)
  std::string final_eval, best_eval, early_stop;  // JSON; empty: none
  std::string membership = "[]";                  // JSON array of the events
  std::string control_messages = "{}";            // JSON: NodeTable::Traffic
  std::string model, model_last;                  // paths; empty: no model written
};

JsonObject SummaryJson(const JobFacts& f);

}  // namespace tteps::scheduler
