// Where the parameter servers' keys go, given where the processes run.
#pragma once

#include <string>
#include <vector>

namespace tteps::scheduler {

// Weights for the servers' shares of the keys (common/key_range.h PartitionKeys) that give
// every server host's link about the same bytes: a server's pull replies, and the pushes to
// it, cross its host's link once for each worker on another host, so a server whose host has
// r such workers gets a share in proportion to 1 / r (r < 1 counts as 1), split evenly among
// the servers on that host. Hosts are names (NodeInfo::host). All on one host, or servers on
// hosts with equal numbers of workers elsewhere: equal weights, the byte-balanced cut.
std::vector<double> LinkBalancedWeights(const std::vector<std::string>& server_hosts,
                                        const std::vector<std::string>& worker_hosts);

}  // namespace tteps::scheduler
