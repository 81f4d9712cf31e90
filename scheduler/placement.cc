#include "scheduler/placement.h"

#include <algorithm>
#include <map>

namespace tteps::scheduler {

std::vector<double> LinkBalancedWeights(const std::vector<std::string>& server_hosts,
                                        const std::vector<std::string>& worker_hosts) {
  struct Host {
    int servers = 0;
    double workers = 0;
    double lo = 0, hi = 0;  // the host's share under the bound being tried
  };
  std::map<std::string, Host> hosts;
  for (const auto& h : server_hosts) ++hosts[h].servers;
  const double total = static_cast<double>(worker_hosts.size());
  for (const auto& w : worker_hosts) {
    auto it = hosts.find(w);
    if (it != hosts.end()) ++it->second.workers;
  }
  // Under a bound L on every link direction, share s of host h must satisfy
  // s x (W - w) <= L and (1 - s) x w <= L. Hosts without servers take (their w) in whatever
  // the shares, so they add nothing to choose. Feasible when the bounds admit a sum of 1.
  const auto feasible = [&](double bound) {
    double lo = 0, hi = 0;
    bool ok = true;
    for (auto& [name, h] : hosts) {
      h.lo = h.workers > 0 ? std::max(0.0, 1 - bound / h.workers) : 0;
      h.hi = total > h.workers ? std::min(1.0, bound / (total - h.workers)) : 1;
      ok = ok && h.lo <= h.hi;
      lo += h.lo;
      hi += h.hi;
    }
    return ok && lo <= 1 && hi >= 1;
  };
  double low = 0, high = std::max(1.0, total);
  for (int i = 0; i < 100; ++i) {
    const double mid = (low + high) / 2;
    (feasible(mid) ? high : low) = mid;
  }
  feasible(high);
  // The shares: each host's lower bound, and what is left in proportion to its room.
  double lo_sum = 0, room = 0;
  for (const auto& [name, h] : hosts) {
    lo_sum += h.lo;
    room += h.hi - h.lo;
  }
  std::vector<double> weights;
  for (const auto& host : server_hosts) {
    const Host& h = hosts[host];
    const double share = h.lo + (room > 0 ? (1 - lo_sum) * (h.hi - h.lo) / room : 0);
    weights.push_back(std::max(share, 1e-9) / h.servers);
  }
  return weights;
}

std::vector<KeyRange> ServerRanges(int64_t param_count, int servers, int replicas,
                                   std::vector<double> weights,
                                   const std::vector<KeyRange>& light_keys) {
  const int distinct = servers / replicas;
  weights.resize(distinct, 1.0);
  const std::vector<KeyRange> parts = PartitionKeys(param_count, weights, light_keys);
  std::vector<KeyRange> ranges;
  for (int s = 0; s < servers; ++s) ranges.push_back(parts[s % distinct]);
  return ranges;
}

}  // namespace tteps::scheduler
