#include "common/cluster_map.h"

#include <unistd.h>

#include "common/cereal_body.h"

namespace tteps {

std::string NodeInfo::Name() const {
  std::string s = std::string(RoleName(role)) + " " + std::to_string(id) + " (";
  if (mpi_rank >= 0) s += "rank " + std::to_string(mpi_rank) + ", ";
  return s + "host " + host + ", pid " + std::to_string(pid) + ")";
}

std::string EncodeBody(const NodeInfo& v) { return EncodeCereal(v); }
std::string EncodeBody(const ClusterMap& v) { return EncodeCereal(v); }
void DecodeBody(const std::string& text, NodeInfo* v) { *v = DecodeCereal<NodeInfo>(text); }
void DecodeBody(const std::string& text, ClusterMap* v) { *v = DecodeCereal<ClusterMap>(text); }

std::vector<int> ReplicasOf(const ClusterMap& map, int server) {
  std::vector<int> out;
  for (size_t s = 0; s < map.ranges.size(); ++s) {
    if (map.ranges[s] == map.ranges.at(server)) out.push_back(static_cast<int>(s));
  }
  return out;
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

}  // namespace tteps
