// The checkpoint files of a job's servers, DIR/server-<id>-v<version>.ckpt, one per server and
// version: their format, and the queries the scheduler makes of a directory of them (where a
// job resumes, where a rollback returns to). Writing and restoring a shard is the server's
// (server/checkpoint.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/adascale.h"
#include "common/file_formats.h"
#include "common/key_range.h"

namespace tteps {

constexpr uint32_t kCheckpointMagic = 0x5454434b;  // "TTCK", then the format version
// The magic of the unversioned files of tteps before 1.0.0, refused as format version 0.
constexpr uint32_t kCheckpointMagicBefore1 = 0x54544350;  // "TTCP"

// One server's checkpoint: its key range's values, version, worker clocks and optimizer state.
struct ShardCheckpoint {
  uint32_t magic = kCheckpointMagic;
  uint32_t format = kCheckpointFormat;  // common/file_formats.h
  int32_t server_id = 0;
  int64_t version = 0, begin = 0, end = 0, optimizer_steps = 0;
  std::vector<int64_t> clocks;
  std::vector<float> values;
  std::vector<std::pair<std::string, std::vector<float>>> optimizer_state;
  AdaScale::State adascale;  // zero without --lr_scaling adascale (the same on every server)

  template <class Archive>
  void serialize(Archive& ar) {
    ar(magic, format, server_id, version, begin, end, optimizer_steps, clocks, values,
       optimizer_state, adascale);
  }
};

std::string CheckpointFileName(int server_id, int64_t version);
// The checkpoint in `bytes` (`name` for messages); any garbling, or another format version, is a
// std::runtime_error naming it, never an allocation of what a garbled count claims.
ShardCheckpoint DecodeShardCheckpoint(const std::string& bytes, const std::string& name);
// The same from a file; a missing one is a std::runtime_error naming it.
ShardCheckpoint ReadShardCheckpoint(const std::string& path);

// Deletes the checkpoints of versions after `version` (a rollback's abandoned steps).
void RemoveCheckpointsAfter(const std::string& dir, int64_t version);

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

}  // namespace tteps
