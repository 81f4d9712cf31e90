// Checkpoints of one shard: values, version, worker clocks and optimizer state, written
// atomically (temporary file + rename) as DIR/server-<id>-v<version>.ckpt. The two newest
// are kept, so a crash while writing one leaves the previous one whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint_files.h"
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
// The same from a checkpoint file's bytes (`name` for messages); any garbling is a
// std::runtime_error, never an allocation of what a garbled count claims.
void RestoreCheckpoint(const std::string& bytes, const std::string& name, Shard* shard);

}  // namespace tteps::server
