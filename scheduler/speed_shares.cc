#include "scheduler/speed_shares.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

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

}  // namespace tteps::scheduler
