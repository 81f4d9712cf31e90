#include "scheduler/placement.h"

#include <algorithm>
#include <map>

namespace tteps::scheduler {

std::vector<double> LinkBalancedWeights(const std::vector<std::string>& server_hosts,
                                        const std::vector<std::string>& worker_hosts) {
  std::map<std::string, int> servers_on;
  for (const auto& h : server_hosts) ++servers_on[h];
  std::vector<double> weights;
  for (const auto& h : server_hosts) {
    const auto elsewhere = std::count_if(worker_hosts.begin(), worker_hosts.end(),
                                         [&](const std::string& w) { return w != h; });
    weights.push_back(1.0 /
                      (std::max<double>(1.0, static_cast<double>(elsewhere)) * servers_on[h]));
  }
  return weights;
}

}  // namespace tteps::scheduler
