// Workers that join a running job, slices handed over at a step boundary, and --min_workers'
// pauses. Sync: a worker registering while the job trains (tteps-worker --scheduler ...) takes
// over a lost worker's slice from its adopter: the adopter leaves it at a step boundary
// (kReleaseSlice, kReleased), and the joiner starts at that step, so every step still sums the
// same trips. Refused (with the reason) when no adopted slice is free. Async / SSP: the joiner
// takes a lost worker's place (its id's pushes count for it on the servers, kWorkerJoined) from
// the step that worker last reported. Below --min_workers live workers the workers pause until
// enough joined; a pause longer than --timeout_s fails the job, naming the lost.
#pragma once

#include <string>

#include "common/topics/worker_topics.h"
#include "common/transport.h"
#include "scheduler/job_state.h"
#include "scheduler/registration.h"

namespace tteps::scheduler {

class Joins {
 public:
  explicit Joins(JobState& job) : job_(job) {}
  // A registration from an unknown peer while the job runs: a joiner, or refused with why.
  void OnJoin(const Message& m);
  void OnJoinerReady(const Node& node);
  // Sync: `node` left a slice (a joiner computes it from the step it names).
  void OnReleased(const Node& node, const topics::Released& released);
  // Pauses or resumes training by --min_workers; returns why the job fails (empty: it goes on).
  std::string CheckMinWorkers();

 private:
  std::string JoinRefusal(const NodeInfo& info, int* slice) const;
  // Async / SSP: the last step reported for a worker's place, by it or by a joiner that held it.
  int64_t PlaceStep(int place) const;
  void RecordJoin(int worker, int slice, int from_worker, int64_t step, const std::string& text);

  JobState& job_;
};

}  // namespace tteps::scheduler
