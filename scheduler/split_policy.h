// What the policies that split the global batch over the slices (speed, goodput) share: each
// slice's accumulation, the micro-batches a survivor computes for lost workers besides its own
// slice, which slices are orphaned (after a loss, until a worker joins for them: no decision
// changes their accumulation), and the queue of decisions. Torch-free.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/accumulation_policy.h"
#include "scheduler/decision_queue.h"

namespace tteps::scheduler {

class SplitPolicy : public AccumulationPolicy {
 public:
  std::optional<AlphaDecision> Poll() override { return decisions_.Pop(); }
  std::string Finish() override { return ""; }

  void SetOrphaned(int slice, int64_t accumulation) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Known(slice) || accumulation < 1) return;
    orphaned_[slice] = true;
    alpha_[slice] = accumulation;
  }
  void SetOwned(int slice) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Known(slice)) return;
    orphaned_[slice] = false;
    extra_[slice] = 0;
    Forget(static_cast<size_t>(slice));  // a new worker: measured before the next decision
  }

 protected:
  SplitPolicy(int workers, int64_t accumulation)
      : alpha_(workers, accumulation), extra_(workers, 0.0), orphaned_(workers, false) {}
  // Drops what was measured of `slice` (called with mu_ held).
  virtual void Forget(size_t slice) = 0;
  bool Known(int slice) const { return slice >= 0 && static_cast<size_t>(slice) < alpha_.size(); }

  std::mutex mu_;
  std::vector<int64_t> alpha_;  // each slice's accumulation
  std::vector<double> extra_;   // micro-batches of orphaned slices each worker computes besides
  std::vector<bool> orphaned_;  // computed by another worker at a fixed accumulation
  DecisionQueue decisions_;
};

}  // namespace tteps::scheduler
