#include "scheduler/speed_policy.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "scheduler/split_policy.h"

namespace tteps::scheduler {

std::vector<int64_t> SpeedShares(const std::vector<double>& seconds_per_micro_batch, int64_t total,
                                 int64_t lo, int64_t hi, const std::vector<double>& extra) {
  const size_t n = seconds_per_micro_batch.size();
  if (n == 0 || lo < 1 || hi < lo || (!extra.empty() && extra.size() != n)) {
    throw std::invalid_argument("SpeedShares: bad arguments");
  }
  const auto extra_of = [&](size_t i) { return extra.empty() ? 0.0 : std::max(0.0, extra[i]); };
  double extra_sum = 0;
  for (size_t i = 0; i < n; ++i) extra_sum += extra_of(i);
  std::vector<double> speed(n);
  for (size_t i = 0; i < n; ++i) {
    const double t = seconds_per_micro_batch[i];
    speed[i] = t > 0 && std::isfinite(t) ? 1.0 / t : 0.0;
  }
  const double sum = std::accumulate(speed.begin(), speed.end(), 0.0);
  std::vector<int64_t> share(n);
  std::vector<double> remainder(n);
  for (size_t i = 0; i < n; ++i) {
    // Equal time: (share + extra) in proportion to the speed.
    const double exact = std::max(0.0, sum > 0 ? (total + extra_sum) * speed[i] / sum - extra_of(i)
                                               : static_cast<double>(total) / n);
    share[i] = static_cast<int64_t>(std::floor(exact));
    remainder[i] = exact - share[i];
  }
  // Largest remainders first; ties to the lower index, so the split is deterministic.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  int64_t left = total - std::accumulate(share.begin(), share.end(), int64_t{0});
  for (size_t k = 0; left > 0; k = (k + 1) % n, --left) ++share[order[k]];
  // Into the bounds: what a clamp takes from (or gives to) one worker goes to (or comes from)
  // the fastest workers that can still take it.
  for (auto& s : share) s = std::clamp(s, lo, hi);
  int64_t excess = std::accumulate(share.begin(), share.end(), int64_t{0}) - total;
  std::vector<size_t> by_speed(n);
  std::iota(by_speed.begin(), by_speed.end(), 0);
  std::stable_sort(by_speed.begin(), by_speed.end(),
                   [&](size_t a, size_t b) { return speed[a] > speed[b]; });
  for (bool moved = true; excess != 0 && moved;) {
    moved = false;
    if (excess < 0) {  // the fastest that can take one more
      for (size_t i : by_speed) {
        if (share[i] < hi) {
          ++share[i], ++excess, moved = true;
          break;
        }
      }
    } else {  // the slowest that can give one up
      for (auto it = by_speed.rbegin(); it != by_speed.rend(); ++it) {
        if (share[*it] > lo) {
          --share[*it], --excess, moved = true;
          break;
        }
      }
    }
  }
  return share;
}

namespace {

class SpeedPolicy : public SplitPolicy {
 public:
  SpeedPolicy(int workers, int64_t accumulation, int64_t lo, int64_t hi)
      : SplitPolicy(workers, accumulation),
        lo_(lo),
        hi_(hi),
        total_(workers * accumulation),
        seconds_(workers, 0.0) {}

  void Observe(const ppo::WindowReport& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t w = static_cast<size_t>(r.worker);
    if (w >= alpha_.size() || orphaned_[w] || r.alpha <= 0 || r.compute_s <= 0) return;
    // A window that ran (at least partly) at another accumulation says little about this one.
    if (r.alpha != alpha_[w]) return;
    const double t = r.compute_s / static_cast<double>(r.alpha + std::max<int64_t>(0, r.extra));
    seconds_[w] = seconds_[w] > 0 ? 0.5 * seconds_[w] + 0.5 * t : t;
    extra_[w] = static_cast<double>(std::max<int64_t>(0, r.extra));
    Decide(r.step);
  }

  void Forget(size_t slice) override { seconds_[slice] = 0; }

 private:
  // A new split of the global batch, less the orphaned slices', over the other slices.
  void Decide(int64_t step) {
    std::vector<size_t> owned;
    int64_t total = total_;
    std::vector<double> seconds, extra;
    for (size_t i = 0; i < alpha_.size(); ++i) {
      if (orphaned_[i]) {
        total -= alpha_[i];
        continue;
      }
      if (seconds_[i] <= 0) return;  // not measured at its accumulation yet
      owned.push_back(i);
      seconds.push_back(seconds_[i]);
      extra.push_back(extra_[i]);
    }
    if (owned.empty() || total < 1) return;
    const std::vector<int64_t> shares = SpeedShares(seconds, total, lo_, hi_, extra);
    std::vector<int64_t> next = alpha_;
    for (size_t k = 0; k < owned.size(); ++k) next[owned[k]] = shares[k];
    if (StepSeconds(next) > 0.95 * StepSeconds(alpha_)) return;
    for (size_t i : owned) {
      if (next[i] == alpha_[i]) continue;
      AlphaDecision d;
      d.worker = static_cast<int>(i);
      d.step = step;
      d.old_alpha = alpha_[i];
      d.new_alpha = next[i];
      d.action = "speed";
      d.observation.assign(seconds_.begin(), seconds_.end());  // seconds per micro-batch
      decisions_.Push(std::move(d));
      alpha_[i] = next[i];
      seconds_[i] = 0;  // measured again at the new accumulation before the next split
    }
  }

  // The step's predicted length: the slowest worker's (its adopted slices included).
  double StepSeconds(const std::vector<int64_t>& alpha) const {
    double slowest = 0;
    for (size_t i = 0; i < alpha.size(); ++i) {
      if (!orphaned_[i]) slowest = std::max(slowest, (alpha[i] + extra_[i]) * seconds_[i]);
    }
    return slowest;
  }

  const int64_t lo_, hi_, total_;
  std::vector<double> seconds_;  // per micro-batch, smoothed; 0: not measured at alpha_ yet
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
