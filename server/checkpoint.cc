#include "server/checkpoint.h"

#include <glog/logging.h>

#include <algorithm>
#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <filesystem>
#include <sstream>

#include "common/atomic_file.h"

namespace tteps::server {
namespace {

namespace fs = std::filesystem;

void Restore(ShardCheckpoint b, const std::string& name, Shard* shard) {
  if (b.begin != shard->range().begin || b.end != shard->range().end) {
    throw std::runtime_error(name + " holds keys [" + std::to_string(b.begin) + ", " +
                             std::to_string(b.end) + "), this server " + shard->range().ToString());
  }
  try {
    shard->optimizer().Restore(b.optimizer_state, b.optimizer_steps);
    shard->Restore(std::move(b.values), b.version, std::move(b.clocks));
    shard->RestoreAdaScale(b.adascale);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(name + " does not fit this job: " + e.what());
  }
}

}  // namespace

void SaveCheckpoint(const std::string& dir, int server_id, Shard& shard) {
  fs::create_directories(dir);
  ShardCheckpoint b;
  b.server_id = server_id;
  b.version = shard.version();
  b.begin = shard.range().begin;
  b.end = shard.range().end;
  b.clocks = shard.clocks();
  b.values = *shard.values();
  b.optimizer_state = shard.optimizer().State();
  b.optimizer_steps = shard.optimizer().steps();
  if (shard.adascale()) b.adascale = shard.adascale()->state();
  const std::string path = dir + "/" + CheckpointFileName(server_id, b.version);
  std::ostringstream bytes;
  {
    cereal::BinaryOutputArchive ar(bytes);
    ar(b);
  }
  // Whole or not at all, a full disk named (common/atomic_file.h); a temporary torn by a kill is
  // never listed (ListCheckpoints) and goes with this server's next checkpoint.
  WriteFileAtomically(path, bytes.str());
  // Keep the two newest of this server.
  std::vector<int64_t> versions;
  for (const auto& c : ListCheckpoints(dir)) {
    if (c.server_id == server_id) versions.push_back(c.version);
  }
  std::sort(versions.rbegin(), versions.rend());
  for (size_t i = 2; i < versions.size(); ++i)
    fs::remove(dir + "/" + CheckpointFileName(server_id, versions[i]));
  const std::string torn = "server-" + std::to_string(server_id) + "-v";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(torn, 0) == 0 && file.size() > 9 &&
        file.compare(file.size() - 9, 9, ".ckpt.tmp") == 0) {
      fs::remove(entry.path(), ec);
    }
  }
  VLOG(1) << "checkpoint " << path;
}

void LoadCheckpoint(const std::string& dir, int server_id, int64_t version, Shard* shard) {
  const std::string path = dir + "/" + CheckpointFileName(server_id, version);
  Restore(ReadShardCheckpoint(path), path, shard);
}

void LoadCheckpointRange(const std::string& dir, const std::vector<int>& sources, int64_t version,
                         Shard* shard) {
  const KeyRange want = shard->range();
  std::vector<float> values(static_cast<size_t>(want.size()));
  std::vector<std::pair<std::string, std::vector<float>>> state;
  std::vector<int64_t> clocks;
  AdaScale::State adascale;               // every server's is the same
  int64_t steps = -1, next = want.begin;  // keys [want.begin, next) are filled
  for (int id : sources) {
    const std::string path = dir + "/" + CheckpointFileName(id, version);
    ShardCheckpoint b = ReadShardCheckpoint(path);
    const int64_t lo = std::max(b.begin, want.begin), hi = std::min(b.end, want.end);
    if (lo >= hi) continue;
    if (lo != next || static_cast<int64_t>(b.values.size()) != b.end - b.begin) {
      throw std::runtime_error(path + " holds [" + std::to_string(b.begin) + ", " +
                               std::to_string(b.end) + "): the files do not cut " +
                               want.ToString() + " in order");
    }
    const auto from = static_cast<size_t>(lo - b.begin), n = static_cast<size_t>(hi - lo);
    const auto to = static_cast<size_t>(lo - want.begin);
    std::copy_n(b.values.begin() + from, n, values.begin() + to);
    if (state.empty()) {
      for (const auto& [name, buffer] : b.optimizer_state) {
        state.emplace_back(name, std::vector<float>(values.size()));
      }
      clocks = b.clocks;
      steps = b.optimizer_steps;
      adascale = b.adascale;
    }
    if (b.optimizer_state.size() != state.size() || b.optimizer_steps != steps ||
        b.clocks.size() != clocks.size()) {
      throw std::runtime_error(path + " disagrees with the other checkpoints of version " +
                               std::to_string(version));
    }
    for (size_t i = 0; i < state.size(); ++i) {
      const auto& [name, buffer] = b.optimizer_state[i];
      if (name != state[i].first || buffer.size() != b.values.size()) {
        throw std::runtime_error(path + ": optimizer state '" + name + "' does not fit");
      }
      std::copy_n(buffer.begin() + from, n, state[i].second.begin() + to);
    }
    for (size_t w = 0; w < clocks.size(); ++w) clocks[w] = std::min(clocks[w], b.clocks[w]);
    next = hi;
  }
  if (next != want.end) {
    throw std::runtime_error("the checkpoints of version " + std::to_string(version) + " in " +
                             dir + " do not hold keys [" + std::to_string(next) + ", " +
                             std::to_string(want.end) + ")");
  }
  try {
    shard->optimizer().Restore(state, steps);
    shard->Restore(std::move(values), version, std::move(clocks));
    shard->RestoreAdaScale(adascale);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("the checkpoints of version " + std::to_string(version) +
                             " do not fit this job: " + e.what());
  }
}

int LoadReplicaCheckpoint(const std::string& dir, const std::vector<int>& replicas, int64_t version,
                          Shard* shard) {
  for (int s : replicas) {
    if (fs::exists(dir + "/" + CheckpointFileName(s, version))) {
      LoadCheckpoint(dir, s, version, shard);
      return s;
    }
  }
  LoadCheckpoint(dir, replicas.at(0), version, shard);  // throws, naming the first one's file
  return replicas.at(0);
}

void RestoreCheckpoint(const std::string& bytes, const std::string& name, Shard* shard) {
  Restore(DecodeShardCheckpoint(bytes, name), name, shard);
}

}  // namespace tteps::server
