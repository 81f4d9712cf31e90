// Where the parameter servers' keys go, given where the processes run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/key_range.h"

namespace tteps::scheduler {

// Shares of the keys for the servers (weights for common/key_range.h PartitionKeys) that keep
// the busiest direction of any host's link as light as they can. Of a pull, a host with w of
// the W workers whose servers hold a share s of the keys sends s x (W - w) models' bytes out
// (its servers' replies to workers elsewhere) and takes (1 - s) x w in (the other servers'
// replies to its workers); a push is the same the other way round. The shares minimise the
// largest of those over hosts and directions; a host's share is split evenly among its
// servers. Hosts are names (NodeInfo::host). All on one host, or the servers on hosts alike:
// equal shares, the byte-balanced cut. The result sums to 1, every share > 0.
std::vector<double> LinkBalancedWeights(const std::vector<std::string>& server_hosts,
                                        const std::vector<std::string>& worker_hosts);

// The servers' key ranges with --replicas R: S / R distinct ranges cut by `weights` (the first
// S / R of them; common/key_range.h PartitionKeys), server s holding range s % (S / R).
std::vector<KeyRange> ServerRanges(int64_t param_count, int servers, int replicas,
                                   std::vector<double> weights,
                                   const std::vector<KeyRange>& light_keys);

}  // namespace tteps::scheduler
