#include "common/cluster_map.h"

#include <unistd.h>

#include <stdexcept>

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

ServerRemap RemapOf(const ClusterMap& map) {
  ServerRemap r;
  r.epoch = map.epoch;
  r.servers = map.servers;
  r.ranges = map.ranges;
  r.replicas = map.config.cluster.replicas;
  r.resume_version = map.resume_version;
  r.start_steps = map.start_steps;
  r.resume_sources = map.resume_sources;
  r.schedules = map.schedules;
  return r;
}

ClusterMap Remapped(ClusterMap map, const ServerRemap& remap) {
  map.epoch = remap.epoch;
  map.servers = remap.servers;
  map.ranges = remap.ranges;
  map.config.cluster.replicas = remap.replicas;
  map.resume_version = remap.resume_version;
  map.start_steps = remap.start_steps;
  map.resume_sources = remap.resume_sources;
  map.schedules = remap.schedules;
  return map;
}

int ServerIdIn(const ClusterMap& map, const std::string& endpoint) {
  for (size_t s = 0; s < map.servers.size(); ++s) {
    if (map.servers[s].endpoint == endpoint) return static_cast<int>(s);
  }
  throw std::runtime_error("no server at " + endpoint + " in the cluster map of epoch " +
                           std::to_string(map.epoch));
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

}  // namespace tteps
