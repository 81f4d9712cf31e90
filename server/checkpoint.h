// Checkpoints of one shard: values, version, worker clocks and optimizer state, written
// atomically (temporary file + rename) as DIR/server-<id>-v<version>.ckpt. The two newest
// are kept, so a crash while writing one leaves the previous one whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/shard.h"

namespace tteps::server {

void SaveCheckpoint(const std::string& dir, int server_id, Shard& shard);
// Restores the shard (and its optimizer) from DIR/server-<id>-v<version>.ckpt. Throws
// std::runtime_error naming the file if it is missing, garbled or for another range.
void LoadCheckpoint(const std::string& dir, int server_id, int64_t version, Shard* shard);
// --replicas: the first of `replicas` (server ids holding one range) whose checkpoint of
// `version` exists; returns its id.
int LoadReplicaCheckpoint(const std::string& dir, const std::vector<int>& replicas, int64_t version,
                          Shard* shard);
// A rollback onto other ranges: restores shard->range() at `version` from the checkpoint files
// of servers `sources` (ranges in key order, which together hold the range; values and
// optimizer state cut out of them, clocks the smallest). Throws std::runtime_error naming the
// file or the keys missing.
void LoadCheckpointRange(const std::string& dir, const std::vector<int>& sources, int64_t version,
                         Shard* shard);
// Deletes the checkpoints of versions after `version` (a rollback's abandoned steps).
void RemoveCheckpointsAfter(const std::string& dir, int64_t version);
// The same from a checkpoint file's bytes (`name` for messages); any garbling is a
// std::runtime_error, never an allocation of what a garbled count claims.
void RestoreCheckpoint(const std::string& bytes, const std::string& name, Shard* shard);

// What a checkpoint of one server holds, without its values: for choosing where to resume.
struct CheckpointInfo {
  int server_id = 0;
  int64_t version = 0;
  std::vector<int64_t> clocks;
};
// Every checkpoint in `dir`, of every server.
std::vector<CheckpointInfo> ListCheckpoints(const std::string& dir);

// The newest version that every one of `num_servers` servers has a checkpoint of (with
// `replicas` > 1: one server of each range, server s holding range s % (num_servers /
// replicas)), each worker's clock there (the smallest over servers) and each server's key
// range: a resumed job keeps its ranges, whatever its placement would cut now. Throws
// std::runtime_error if there is none, or if the ranges do not cut [0, param_count) in server
// order.
struct ResumePoint {
  int64_t version = 0;
  std::vector<int64_t> clocks;
  std::vector<KeyRange> ranges;
  std::vector<int> sources;  // the server whose file holds each distinct range, in key order
};
ResumePoint ChooseResumePoint(const std::string& dir, int num_servers, int64_t param_count,
                              int replicas = 1);
// A rollback's point: the newest version whose files, of whichever servers wrote them, cut
// [0, param_count) into consecutive ranges (`sources`: those files' server ids, in key order;
// of a range held twice, the lower id). After a rollback the servers' ids, count and ranges
// change, and two servers lost at once leave the files of the map before the first rollback:
// neither fits the current map, so the files themselves say what they hold.
ResumePoint ChooseRollbackPoint(const std::string& dir, int64_t param_count);

}  // namespace tteps::server
