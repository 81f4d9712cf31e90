#include "server/checkpoint.h"

#include <glog/logging.h>

#include <algorithm>
#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "common/atomic_file.h"
#include "common/bounded_archive.h"

namespace tteps::server {
namespace {

namespace fs = std::filesystem;
constexpr uint32_t kCheckpointMagic = 0x54544350;  // "TTCP"

std::string FileName(int id, int64_t version) {
  return "server-" + std::to_string(id) + "-v" + std::to_string(version) + ".ckpt";
}

struct Blob {
  uint32_t magic = kCheckpointMagic;
  int32_t server_id = 0;
  int64_t version = 0, begin = 0, end = 0, optimizer_steps = 0;
  std::vector<int64_t> clocks;
  std::vector<float> values;
  std::vector<std::pair<std::string, std::vector<float>>> optimizer_state;
  AdaScale::State adascale;  // zero without --lr_scaling adascale (the same on every server)

  template <class Archive>
  void serialize(Archive& ar) {
    ar(magic, server_id, version, begin, end, optimizer_steps, clocks, values, optimizer_state,
       adascale);
  }
};

Blob DecodeBlob(const std::string& bytes, const std::string& name) {
  uint32_t magic = 0;
  if (bytes.size() >= sizeof magic) std::memcpy(&magic, bytes.data(), sizeof magic);
  if (magic != kCheckpointMagic) throw std::runtime_error(name + " is not a tteps checkpoint");
  BoundedInputArchive ar(bytes.data(), bytes.size());
  Blob b;
  try {
    ar(b);
  } catch (const std::exception& e) {  // cereal::Exception, or bad_alloc from a huge file
    throw std::runtime_error("garbled checkpoint " + name + ": " + e.what());
  }
  if (ar.left() != 0) throw std::runtime_error("garbled checkpoint " + name + ": trailing bytes");
  return b;
}

Blob ReadBlob(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open checkpoint " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return DecodeBlob(bytes.str(), path);
}

void Restore(Blob b, const std::string& name, Shard* shard) {
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
  Blob b;
  b.server_id = server_id;
  b.version = shard.version();
  b.begin = shard.range().begin;
  b.end = shard.range().end;
  b.clocks = shard.clocks();
  b.values = *shard.values();
  b.optimizer_state = shard.optimizer().State();
  b.optimizer_steps = shard.optimizer().steps();
  if (shard.adascale()) b.adascale = shard.adascale()->state();
  const std::string path = dir + "/" + FileName(server_id, b.version);
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
    fs::remove(dir + "/" + FileName(server_id, versions[i]));
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
  const std::string path = dir + "/" + FileName(server_id, version);
  Restore(ReadBlob(path), path, shard);
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
    const std::string path = dir + "/" + FileName(id, version);
    Blob b = ReadBlob(path);
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

void RemoveCheckpointsAfter(const std::string& dir, int64_t version) {
  for (const auto& c : ListCheckpoints(dir)) {
    if (c.version > version) fs::remove(dir + "/" + FileName(c.server_id, c.version));
  }
}

int LoadReplicaCheckpoint(const std::string& dir, const std::vector<int>& replicas, int64_t version,
                          Shard* shard) {
  for (int s : replicas) {
    if (fs::exists(dir + "/" + FileName(s, version))) {
      LoadCheckpoint(dir, s, version, shard);
      return s;
    }
  }
  LoadCheckpoint(dir, replicas.at(0), version, shard);  // throws, naming the first one's file
  return replicas.at(0);
}

void RestoreCheckpoint(const std::string& bytes, const std::string& name, Shard* shard) {
  Restore(DecodeBlob(bytes, name), name, shard);
}

std::vector<CheckpointInfo> ListCheckpoints(const std::string& dir) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  const std::regex name(R"(server-(\d+)-v(\d+)\.ckpt)");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, m, name)) continue;
    CheckpointInfo c;
    c.server_id = std::stoi(m[1]);
    c.version = std::stoll(m[2]);
    out.push_back(c);
  }
  return out;
}

// The resume point at `version`, each distinct range from the file of server source[range].
static ResumePoint ResumeAt(const std::string& dir, int64_t version, const std::vector<int>& source,
                            int num_servers, int64_t param_count) {
  const int distinct = static_cast<int>(source.size());
  ResumePoint p;
  {
    p.version = version;
    for (int g = 0; g < distinct; ++g) {
      const std::string file = FileName(source[g], p.version);
      const Blob b = ReadBlob(dir + "/" + file);
      if (p.clocks.empty()) p.clocks = b.clocks;
      if (b.clocks.size() != p.clocks.size()) {
        throw std::runtime_error("checkpoints in " + dir + " disagree on the number of workers");
      }
      for (size_t w = 0; w < p.clocks.size(); ++w) p.clocks[w] = std::min(p.clocks[w], b.clocks[w]);
      if (b.begin != (p.ranges.empty() ? 0 : p.ranges.back().end) || b.end <= b.begin ||
          (g + 1 == distinct && b.end != param_count)) {
        throw std::runtime_error(
            "the checkpoints in " + dir + " at version " + std::to_string(p.version) +
            " do not cut the " + std::to_string(param_count) + " parameters in server order (" +
            file + " holds [" + std::to_string(b.begin) + ", " + std::to_string(b.end) + "))");
      }
      p.ranges.push_back({b.begin, b.end});
    }
    for (int s = distinct; s < num_servers; ++s) p.ranges.push_back(p.ranges[s % distinct]);
    p.sources = source;
  }
  return p;
}

ResumePoint ChooseResumePoint(const std::string& dir, int num_servers, int64_t param_count,
                              int replicas) {
  if (replicas < 1 || num_servers % replicas != 0) {
    throw std::invalid_argument("--replicas " + std::to_string(replicas) + " with " +
                                std::to_string(num_servers) + " servers");
  }
  const int distinct = num_servers / replicas;  // server s holds range s % distinct
  std::map<int64_t, std::set<int>> servers_at;  // version -> servers with a checkpoint of it
  std::string newest_error;
  for (const auto& c : ListCheckpoints(dir)) servers_at[c.version].insert(c.server_id);
  for (auto it = servers_at.rbegin(); it != servers_at.rend(); ++it) {
    // Each range from one of its replicas (a lost server wrote no more checkpoints).
    std::vector<int> source(distinct, -1);
    for (int g = 0; g < distinct; ++g) {
      for (int s = g; s < num_servers && source[g] < 0; s += distinct) {
        if (it->second.count(s)) source[g] = s;
      }
    }
    if (std::count(source.begin(), source.end(), -1) > 0) continue;
    try {
      return ResumeAt(dir, it->first, source, num_servers, param_count);
    } catch (const std::runtime_error& e) {
      // Files of one version from two maps (a rollback's renumbered servers): an older one.
      if (newest_error.empty()) newest_error = e.what();
    }
  }
  if (!newest_error.empty()) throw std::runtime_error(newest_error);
  // Say what is there: most often a job of another server count.
  std::string found = "no checkpoint at all";
  if (!servers_at.empty()) {
    const auto& [version, servers] = *servers_at.rbegin();
    found = "the newest, version " + std::to_string(version) + ", is of " +
            std::to_string(servers.size()) + (servers.size() == 1 ? " server" : " servers") +
            " (--servers must be what the job that wrote them had)";
  }
  throw std::runtime_error("no checkpoint in " + dir + " that all " + std::to_string(num_servers) +
                           " servers have written" +
                           (replicas > 1 ? " (one replica of each range)" : "") + ": " + found);
}

ResumePoint ChooseRollbackPoint(const std::string& dir, int64_t param_count) {
  std::map<int64_t, std::vector<int>> files_at;  // version -> servers with a file of it
  for (const auto& c : ListCheckpoints(dir)) files_at[c.version].push_back(c.server_id);
  for (auto it = files_at.rbegin(); it != files_at.rend(); ++it) {
    const int64_t version = it->first;
    // Each file's range; then a chain of them from key 0 to param_count (replicas: the lowest
    // id of a range).
    std::vector<Blob> blobs;
    std::vector<int> ids = it->second;
    std::sort(ids.begin(), ids.end());
    try {
      for (int id : ids) blobs.push_back(ReadBlob(dir + "/" + FileName(id, version)));
    } catch (const std::exception&) {
      continue;  // a file being replaced, or a broken one: an older version
    }
    ResumePoint p;
    p.version = version;
    for (int64_t next = 0; next < param_count;) {
      size_t pick = blobs.size();
      for (size_t i = 0; i < blobs.size() && pick == blobs.size(); ++i) {
        if (blobs[i].begin == next && blobs[i].end > next) pick = i;
      }
      if (pick == blobs.size()) break;
      const Blob& b = blobs[pick];
      if (!p.clocks.empty() && b.clocks.size() != p.clocks.size()) break;
      if (p.clocks.empty()) p.clocks = b.clocks;
      for (size_t w = 0; w < p.clocks.size(); ++w) p.clocks[w] = std::min(p.clocks[w], b.clocks[w]);
      p.ranges.push_back({b.begin, b.end});
      p.sources.push_back(ids[pick]);
      next = b.end;
    }
    if (!p.ranges.empty() && p.ranges.back().end == param_count) return p;
  }
  throw std::runtime_error("no version in " + dir + " whose checkpoint files cut the " +
                           std::to_string(param_count) + " parameters into consecutive ranges");
}

}  // namespace tteps::server
