// What the scheduler's main hands the coordinator: the job as launched (never rewritten while
// it runs; what changes lives in the cluster map and the membership view).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/curve.h"
#include "common/job_config.h"
#include "common/json_writer.h"
#include "common/key_range.h"
#include "common/slice_schedule.h"

namespace tteps::scheduler {

struct CoordinatorOptions {
  JobConfig config;
  // The training store the scheduler opened (its manifest's checksum; empty: JSON-lines) and
  // where: a worker whose own copy differs is refused at registration.
  std::string data_path, data_checksum;
  uint64_t bad_records_skipped = 0;  // --bad_records skip: by the scheduler's reading
  JsonObject data_facts;             // summary.json's "data": the split, trips, statistics
  int num_servers = 1, num_workers = 1;
  int64_t param_count = 0;
  uint64_t fingerprint = 0;
  // Keys that hardly travel (sparse rows' embedding tables): the servers' ranges share the
  // other keys evenly.
  std::vector<KeyRange> light_keys;
  int64_t total_steps = 0;
  int64_t resume_version = -1;             // >= 0: the servers restore this checkpoint version
  std::vector<KeyRange> resume_ranges;     // resuming: the servers' ranges in the checkpoint
  std::vector<int64_t> start_steps;        // resuming: each worker's first step
  std::map<int, SliceSchedule> schedules;  // resuming: the slices' schedules kept (--resume)
  const CurveSecurity* curve = nullptr;    // CURVE on this scheduler's socket (null: off)
  // A worker computing one step for longer than this fails the job (0: never); a wait on a
  // computing worker is not bounded by --timeout_s (common/busy_peers.h).
  double step_timeout_s = 1800;
  // Jobs of up to this many workers write a train line, TensorBoard series and Prometheus
  // gauges per worker; larger ones how the workers spread, once per job step.
  int worker_series = 64;
};

}  // namespace tteps::scheduler
