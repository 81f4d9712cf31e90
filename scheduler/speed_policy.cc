#include "scheduler/speed_policy.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "scheduler/speed_shares.h"
#include "scheduler/split_policy.h"

namespace tteps::scheduler {
namespace {

class SpeedPolicy : public SplitPolicy {
 public:
  SpeedPolicy(int workers, int64_t accumulation, int64_t lo, int64_t hi)
      : SplitPolicy(workers, accumulation), lo_(lo), hi_(hi), total_(workers * accumulation) {}

  void Observe(const ppo::WindowReport& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (Measure(r)) Decide(r.step);
  }

 private:
  // Once every slice has been measured since the last round: a new split of the global batch,
  // less the orphaned slices', over the other slices.
  void Decide(int64_t step) {
    std::vector<size_t> owned;
    int64_t total = total_;
    std::vector<double> seconds, extra;
    for (size_t i = 0; i < alpha_.size(); ++i) {
      if (orphaned_[i]) {
        total -= alpha_[i];
        continue;
      }
      if (!meter_.fresh(i)) return;  // the round is not complete
      owned.push_back(i);
      seconds.push_back(meter_.seconds(i));
      extra.push_back(extra_[i]);
    }
    if (owned.empty() || total < 1) return;
    meter_.NewRound();
    const std::vector<int64_t> shares = SpeedShares(seconds, total, lo_, hi_, extra);
    std::vector<int64_t> next = alpha_;
    for (size_t k = 0; k < owned.size(); ++k) next[owned[k]] = shares[k];
    if (StepSeconds(next) > 0.95 * StepSeconds(alpha_)) return;
    std::vector<float> observation;  // seconds per micro-batch
    for (size_t i = 0; i < alpha_.size(); ++i) {
      observation.push_back(static_cast<float>(meter_.seconds(i)));
    }
    for (size_t i : owned) {
      if (next[i] == alpha_[i]) continue;
      AlphaDecision d;
      d.worker = static_cast<int>(i);
      d.step = step;
      d.old_alpha = alpha_[i];
      d.new_alpha = next[i];
      d.action = "speed";
      d.observation = observation;
      decisions_.Push(std::move(d));
      alpha_[i] = next[i];
    }
  }

  const int64_t lo_, hi_, total_;
};

}  // namespace

std::unique_ptr<AccumulationPolicy> MakeSpeedPolicy(int workers, int64_t accumulation, int64_t lo,
                                                    int64_t hi) {
  if (workers < 1 || accumulation < lo || accumulation > hi || lo < 1) {
    throw std::invalid_argument(
        "--accumulation_policy speed: --accumulation must lie in [--accumulation_min, "
        "--accumulation_max]");
  }
  return std::make_unique<SpeedPolicy>(workers, accumulation, lo, hi);
}

}  // namespace tteps::scheduler
