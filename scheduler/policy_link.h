// The coordinator's side of an accumulation policy (none with --accumulation_policy fixed):
// the workers' train reports in as windows of their slices, the decisions out to the worker
// whose own slice each is, every decision a metrics line.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/run_output.h"
#include "common/topics/train_report.h"
#include "scheduler/accumulation_policy.h"
#include "scheduler/membership.h"

namespace tteps::scheduler {

class PolicyLink {
 public:
  PolicyLink(AccumulationPolicy* policy, RunOutput* out) : policy_(policy), out_(out) {}
  bool on() const { return policy_ != nullptr; }
  // A worker's report, as a window of `slice` (a joiner's window is its slice's).
  void Observe(const TrainReport& report, int slice);
  void SetOrphaned(int slice, int64_t accumulation);
  void SetOwned(int slice);
  // (worker, accumulation): tells a worker its new accumulation.
  using Send = std::function<void(int, int64_t)>;
  // The decisions made so far: each to its slice's own worker unless that one was lost.
  void SendDecisions(const Membership& members, double wall_s, const Send& send);
  // Training is over (or failed): the agent stops; its last decisions are recorded.
  void Finish(const Membership& members, double wall_s, const Send& send);
  int64_t decisions() const { return decisions_; }
  const std::string& error() const { return error_; }
  // AccumulationPolicy::Record, taken when it finished.
  const std::string& record() const { return record_; }

 private:
  AccumulationPolicy* policy_;
  RunOutput* out_;
  int64_t decisions_ = 0;
  bool finished_ = false;
  std::string error_, record_;
};

}  // namespace tteps::scheduler
