// Control-message bodies: a node's registration and the cluster map the scheduler answers with.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/job_config.h"
#include "common/key_range.h"
#include "common/message.h"

namespace tteps {

struct NodeInfo {
  Role role = Role::kWorker;
  int32_t id = -1;        // index among nodes of its role; -1: let the scheduler assign one
  int32_t mpi_rank = -1;  // -1 when started without MPI
  std::string host;
  int32_t pid = 0;
  std::string endpoint;      // servers: where workers reach them
  int64_t param_count = 0;   // workers: size of the flat parameter vector
  uint64_t fingerprint = 0;  // workers: parameter layout fingerprint
  // Workers: the training data their own flags name, and its identity if it is a trip store
  // (the manifest's checksum; empty for JSON-lines), so that a host with another copy is named.
  std::string data_path, data_checksum;

  // "worker 1 (rank 4, host node2, pid 123)"
  std::string Name() const;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(role, id, mpi_rank, host, pid, endpoint, param_count, fingerprint, data_path, data_checksum);
  }
};

struct ClusterMap {
  int32_t your_id = -1;  // the receiving node's id within its role
  // servers[i] holds ranges[i]; with --replicas R, the first S/R servers hold one range each
  // and every later server a copy of one of them (server i: the range of i % (S/R)).
  std::vector<NodeInfo> servers;
  std::vector<KeyRange> ranges;
  std::vector<NodeInfo> workers;
  int64_t param_count = 0;
  uint64_t fingerprint = 0;
  JobConfig config;  // the job's configuration, as the scheduler validated it
  // Resuming: the checkpoint version the servers restore (-1: a fresh start) and each worker's
  // first step.
  int64_t resume_version = -1;
  std::vector<int64_t> start_steps;
  // A rollback's map (a server was lost without a replica): epoch + 1, the live servers only
  // (ids renumbered), ranges cut anew; the servers restore version resume_version of their new
  // ranges from the checkpoint files of these servers of the map before (one per range there, in
  // key order). Empty: each server restores its own file (or a replica's).
  int32_t epoch = 0;
  std::vector<int32_t> resume_sources;
  // A worker that joined a running sync job (its id beyond `workers`): the slice of the global
  // batch it computes, that of a lost worker. -1: its own id's.
  int32_t own_slice = -1;
  // Resuming or rolling back a job whose accumulation policy changed the slices' accumulations:
  // each slice's schedule (SliceSchedule::Encode; empty: --accumulation throughout), so that its
  // stream starts again where it stood at the checkpoint's step. Empty: none changed.
  std::vector<std::string> schedules;
  // The manifest checksum of the trip store the scheduler trains on (empty: JSON-lines).
  std::string data_checksum;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(your_id, servers, ranges, workers, param_count, fingerprint, config, resume_version,
       start_steps, epoch, resume_sources, own_slice, schedules, data_checksum);
  }
};

// What a rollback changes in the cluster map (a server lost without a replica): the map's epoch,
// the live servers renumbered in their old order with the keys cut anew over them, and where
// training starts again. The view that starts the new epoch carries it (common/view.h); every
// node applies it to the map it holds.
struct ServerRemap {
  int32_t epoch = 0;
  std::vector<NodeInfo> servers;
  std::vector<KeyRange> ranges;
  int32_t replicas = 1;
  int64_t resume_version = -1;
  std::vector<int64_t> start_steps;
  std::vector<int32_t> resume_sources;
  std::vector<std::string> schedules;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(epoch, servers, ranges, replicas, resume_version, start_steps, resume_sources, schedules);
  }
};

// The parts of `map` a rollback changes.
ServerRemap RemapOf(const ClusterMap& map);
// `map` under `remap`; the receiver's id stays (a server's: see ServerIdIn).
ClusterMap Remapped(ClusterMap map, const ServerRemap& remap);
// The id of the server at `endpoint` in `map`; throws std::runtime_error if none is there.
int ServerIdIn(const ClusterMap& map, const std::string& endpoint);

// The slices of the global batch: --slices as the scheduler resolved it, else one per worker at
// launch. Slices past the launch workers have no worker of their own: others compute them.
inline int SliceCount(const ClusterMap& map) {
  return map.config.exchange.slices > 0 ? static_cast<int>(map.config.exchange.slices)
                                        : static_cast<int>(map.workers.size());
}

// Cereal-encodes a control body into a header's text, and back (CodecError if garbled).
std::string EncodeBody(const NodeInfo& v);
std::string EncodeBody(const ClusterMap& v);
void DecodeBody(const std::string& text, NodeInfo* v);
void DecodeBody(const std::string& text, ClusterMap* v);

// The servers holding the same key range as `server` (itself included), in id order: its
// replicas.
std::vector<int> ReplicasOf(const ClusterMap& map, int server);

// The node's own name: "host" from gethostname.
std::string HostName();

}  // namespace tteps
