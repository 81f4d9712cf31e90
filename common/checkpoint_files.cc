#include "common/checkpoint_files.h"

#include <algorithm>
#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/bounded_archive.h"

namespace tteps {

namespace fs = std::filesystem;

std::string CheckpointFileName(int server_id, int64_t version) {
  return "server-" + std::to_string(server_id) + "-v" + std::to_string(version) + ".ckpt";
}

ShardCheckpoint DecodeShardCheckpoint(const std::string& bytes, const std::string& name) {
  uint32_t magic = 0, format = 0;
  if (bytes.size() >= sizeof magic) std::memcpy(&magic, bytes.data(), sizeof magic);
  if (magic == kCheckpointMagic && bytes.size() >= sizeof magic + sizeof format) {
    std::memcpy(&format, bytes.data() + sizeof magic, sizeof format);
  } else if (magic != kCheckpointMagicBefore1) {
    throw std::runtime_error(name + " is not a tteps checkpoint");
  }
  if (format != kCheckpointFormat) {
    throw std::runtime_error(name + " is a tteps checkpoint of format version " +
                             std::to_string(format) + "; this tteps reads version " +
                             std::to_string(kCheckpointFormat) + " (docs/compatibility.md)");
  }
  BoundedInputArchive ar(bytes.data(), bytes.size());
  ShardCheckpoint b;
  try {
    ar(b);
  } catch (const std::exception& e) {  // cereal::Exception, or bad_alloc from a huge file
    throw std::runtime_error("garbled checkpoint " + name + ": " + e.what());
  }
  if (ar.left() != 0) throw std::runtime_error("garbled checkpoint " + name + ": trailing bytes");
  return b;
}

ShardCheckpoint ReadShardCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open checkpoint " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return DecodeShardCheckpoint(bytes.str(), path);
}

void RemoveCheckpointsAfter(const std::string& dir, int64_t version) {
  for (const auto& c : ListCheckpoints(dir)) {
    if (c.version > version) fs::remove(dir + "/" + CheckpointFileName(c.server_id, c.version));
  }
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
      const std::string file = CheckpointFileName(source[g], p.version);
      const ShardCheckpoint b = ReadShardCheckpoint(dir + "/" + file);
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
    std::vector<ShardCheckpoint> blobs;
    std::vector<int> ids = it->second;
    std::sort(ids.begin(), ids.end());
    try {
      for (int id : ids)
        blobs.push_back(ReadShardCheckpoint(dir + "/" + CheckpointFileName(id, version)));
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
      const ShardCheckpoint& b = blobs[pick];
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

}  // namespace tteps
