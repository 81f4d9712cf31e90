// Who chooses each worker's gradient accumulation (alpha) while a job runs: the coordination
// loop hands every worker's window report to the policy and sends the decisions it returns to
// the workers. Training never waits for the policy. Torch-free; the PPO2 implementation is in
// scheduler/ppo/live_policy.h. With --accumulation_policy=fixed there is none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/ppo/observation.h"

namespace tteps::scheduler {

struct AlphaDecision {
  int worker = 0;
  int64_t step = 0;  // the worker's step when it reported the window decided on
  int64_t old_alpha = 1, new_alpha = 1;
  std::string action;
  std::vector<float> observation;
  double reward = 0;  // credited to this worker's previous decision
  bool has_reward = false;
};

class AccumulationPolicy {
 public:
  virtual ~AccumulationPolicy() = default;
  // Thread-safe, never blocks: queues a worker's window for the agent.
  virtual void Observe(const ppo::WindowReport& report) = 0;
  // The next decision, if the agent has made one.
  virtual std::optional<AlphaDecision> Poll() = 0;
  // Sync and ring after a worker loss: `slice` is computed by a survivor (whose windows count
  // it in `extra`) at `accumulation`, its schedule's last, which no decision changes until a
  // worker joins for it: SetOwned, and its windows come as the slice's again. A policy that
  // splits a global batch keeps an orphaned slice's accumulation out of the split. Async and
  // SSP: the lost worker's place is orphaned the same way, though nobody computes it until a
  // worker joins (goodput still counts its trips in the batch it models).
  virtual void SetOrphaned(int slice, int64_t accumulation) {
    (void)slice;
    (void)accumulation;
  }
  virtual void SetOwned(int slice) { (void)slice; }
  // Training is over: stops the agent (saving its policy if asked). Returns an error text, or
  // "" if the agent ran without failure.
  virtual std::string Finish() = 0;
  // What the policy was and did, for summary.json's "policy" (a JSON object's text; after
  // Finish). Empty: nothing beyond its name and decisions.
  virtual std::string Record() const { return ""; }
};

}  // namespace tteps::scheduler
