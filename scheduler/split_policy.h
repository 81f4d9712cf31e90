// What the policies that split the global batch over the slices (speed, goodput, the agent's
// job scope) share: each slice's accumulation and measured speed, the micro-batches a survivor
// computes for lost workers besides its own slice, which slices are orphaned (after a loss,
// until a worker joins for them: no decision changes their accumulation), and the queue of
// decisions. Torch-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/accumulation_policy.h"
#include "scheduler/decision_queue.h"
#include "scheduler/speed_meter.h"

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
    // A new worker: measured before the next decision.
    meter_.Forget(static_cast<size_t>(slice));
    Forget(static_cast<size_t>(slice));
  }

 protected:
  SplitPolicy(int workers, int64_t accumulation)
      : alpha_(workers, accumulation),
        extra_(workers, 0.0),
        orphaned_(workers, false),
        meter_(static_cast<size_t>(workers)) {}
  // Drops what else the policy measured of `slice` (called with mu_ held).
  virtual void Forget(size_t slice) { (void)slice; }
  bool Known(int slice) const { return slice >= 0 && static_cast<size_t>(slice) < alpha_.size(); }

  // Measures the speed of `r`'s slice and its adopted micro-batches (called with mu_ held).
  // False where `r` says nothing of an owned slice at its current accumulation.
  bool Measure(const ppo::WindowReport& r) {
    if (!Known(r.worker) || r.alpha <= 0) return false;
    const auto w = static_cast<size_t>(r.worker);
    if (orphaned_[w] || !meter_.Observe(w, r, alpha_[w])) return false;
    extra_[w] = static_cast<double>(std::max<int64_t>(0, r.extra));
    return true;
  }

  // The step `alpha` predicts: the slowest owned slice's micro-batches (adopted ones
  // included) x its seconds per micro-batch.
  double StepSeconds(const std::vector<int64_t>& alpha) const {
    double slowest = 0;
    for (size_t i = 0; i < alpha.size(); ++i) {
      if (!orphaned_[i]) slowest = std::max(slowest, (alpha[i] + extra_[i]) * meter_.seconds(i));
    }
    return slowest;
  }

  std::mutex mu_;
  std::vector<int64_t> alpha_;  // each slice's accumulation
  std::vector<double> extra_;   // micro-batches of orphaned slices each worker computes besides
  std::vector<bool> orphaned_;  // computed by another worker at a fixed accumulation
  SpeedMeter meter_;            // each slice's seconds per micro-batch
  DecisionQueue decisions_;
};

}  // namespace tteps::scheduler
