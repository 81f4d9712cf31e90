#include "model/data/trip_store.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/data/crc32c.h"
#include "model/data/mapped_reads.h"
#include "model/data/trip_store_format.h"

namespace tteps::data {
namespace store {

uint32_t Crc32(uint32_t crc, const void* data, size_t bytes) { return Crc32c(crc, data, bytes); }

uint32_t TripCrc(const float* block, uint64_t length, double dist, double time, int32_t driver,
                 int32_t date, int32_t week, int32_t minute) {
  uint32_t crc = Crc32(0, block, sizeof(float) * kSequences * length);
  struct {
    double dist, time;
    int32_t driver, date, week, minute;
    uint64_t length;
  } attrs{dist, time, driver, date, week, minute, length};
  static_assert(sizeof(attrs) == 40, "no padding inside the attributes");
  return Crc32(crc, &attrs, sizeof(attrs));
}

std::string CrcText(uint32_t crc) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", crc);
  return text;
}

}  // namespace store

namespace {

using namespace store;

std::string Join(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

uint32_t ParseCrc(const std::string& text) {
  if (text.size() != 10 || text.compare(0, 2, "0x") != 0) throw std::invalid_argument(text);
  return static_cast<uint32_t>(std::stoul(text.substr(2), nullptr, 16));
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool IsTripStore(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) &&
         std::filesystem::is_regular_file(Join(path, kManifest), ec);
}

namespace {

// Shard `index`'s entry of the manifest; `bad` makes the error to throw.
template <class Bad>
StoreShardInfo ReadShardInfo(simdjson::dom::element e, size_t index, const Bad& bad) {
  StoreShardInfo s;
  std::string_view file, crc;
  if (e["file"].get(file) || e["trips"].get(s.trips) || e["points"].get(s.points) ||
      e["bytes"].get(s.bytes) || e["crc32c"].get(crc)) {
    throw bad("shard " + std::to_string(index) + " lacks file, trips, points, bytes or crc32c");
  }
  s.file = std::string(file);
  if (s.file.find('/') != std::string::npos) throw bad("shard file '" + s.file + "' has a '/'");
  s.crc = ParseCrc(std::string(crc));
  // Counts that could not fit the shard's bytes (44 per trip and 20 per point at least) would
  // overflow the layout's arithmetic: refused before anything is mapped.
  if (s.bytes > (uint64_t{1} << 48) || s.trips > s.bytes / 44 || s.points > s.bytes / 20) {
    throw bad("shard " + s.file + ": " + std::to_string(s.trips) + " trips and " +
              std::to_string(s.points) + " points cannot fit its " + std::to_string(s.bytes) +
              " bytes");
  }
  return s;
}

}  // namespace

StoreManifest ReadStoreManifest(const std::string& dir) {
  const std::string path = Join(dir, kManifest);
  std::ifstream in(path);
  if (!in)
    throw DataError("cannot open the store's manifest '" + path + "': " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  const auto bad = [&](const std::string& why) -> DataError {
    return DataError("store manifest '" + path + "': " + why);
  };
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json).get(root) != simdjson::SUCCESS) throw bad("not valid JSON");
  StoreManifest m;
  try {
    std::string_view format;
    if (root["format"].get(format) != simdjson::SUCCESS || format != kFormatName) {
      throw bad(std::string("not a trip store (format is not '") + kFormatName + "')");
    }
    uint64_t version = 0;
    if (root["version"].get(version) != simdjson::SUCCESS) throw bad("no format version");
    if (version != kVersion) {
      throw bad("format version " + std::to_string(version) + ", this tteps reads version " +
                std::to_string(kVersion) + " (repack the JSON-lines with this tteps-pack)");
    }
    m.version = static_cast<uint32_t>(version);
    std::string_view checksum;
    int64_t min_points = 0;
    if (root["trips"].get(m.trips) || root["points"].get(m.points) ||
        root["min_points"].get(min_points) || root["checksum"].get(checksum)) {
      throw bad("missing trips, points, min_points or checksum");
    }
    m.min_points = min_points;
    m.checksum = std::string(checksum);
    simdjson::dom::array shards;
    if (root["shards"].get(shards)) throw bad("no shards list");
    uint64_t trips = 0, points = 0;
    for (simdjson::dom::element e : shards) {
      StoreShardInfo s = ReadShardInfo(e, m.shards.size(), bad);
      trips += s.trips;
      points += s.points;
      m.shards.push_back(std::move(s));
    }
    if (trips != m.trips || points != m.points) {
      throw bad("the shards hold " + std::to_string(trips) + " trips and " +
                std::to_string(points) + " points, the manifest says " + std::to_string(m.trips) +
                " and " + std::to_string(m.points));
    }
  } catch (const std::invalid_argument& e) {
    throw bad(std::string("bad checksum text ") + e.what());
  }
  return m;
}

struct TripStore::Shard {
  StoreShardInfo info;
  std::string path;
  uint64_t first = 0;
  void* base = MAP_FAILED;
  size_t bytes = 0;
  int guard = -1;  // GuardMapping's handle
  dev_t dev = 0;
  ino_t ino = 0;
  timespec mtime{};
  const uint64_t* offsets = nullptr;
  const double *dist = nullptr, *time = nullptr;
  const int32_t *driver = nullptr, *date = nullptr, *week = nullptr, *minute = nullptr;
  const uint32_t* crc = nullptr;
  const float* points = nullptr;

  ~Shard() {
    if (guard >= 0) UnguardMapping(guard);
    if (base != MAP_FAILED) munmap(base, bytes);
  }
};

TripStore::TripStore(std::string dir) : dir_(std::move(dir)) {}
TripStore::~TripStore() = default;

std::shared_ptr<const TripStore> TripStore::Open(const std::string& dir) {
  std::shared_ptr<TripStore> st(new TripStore(dir));
  st->manifest_ = ReadStoreManifest(dir);
  uint64_t first = 0;
  for (size_t k = 0; k < st->manifest_.shards.size(); ++k) {
    auto s = std::make_unique<Shard>();
    s->info = st->manifest_.shards[k];
    s->path = Join(dir, s->info.file);
    s->first = first;
    MapShard(dir, s.get());
    CheckShard(dir, k, s.get());
    first += s->info.trips;
    st->first_trip_.push_back(s->first);
    st->shards_.push_back(std::move(s));
  }
  st->next_check_ns_ = NowNs() + 2'000'000'000;
  return st;
}

DataError TripStore::ShardError(const std::string& dir, const Shard& s, const std::string& why) {
  return DataError("store '" + dir + "': shard " + s.info.file + ": " + why);
}

void TripStore::MapShard(const std::string& dir, Shard* s) {
  if (LayoutOf(s->info.trips, s->info.points).total != s->info.bytes) {
    throw ShardError(dir, *s,
                     "the manifest's size " + std::to_string(s->info.bytes) + " does not fit " +
                         std::to_string(s->info.trips) + " trips of " +
                         std::to_string(s->info.points) + " points");
  }
  const int fd = ::open(s->path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ShardError(dir, *s, std::string("cannot open: ") + std::strerror(errno));
  struct stat sb {};
  if (fstat(fd, &sb) != 0) {
    const int err = errno;
    ::close(fd);
    throw ShardError(dir, *s, std::string("cannot stat: ") + std::strerror(err));
  }
  if (static_cast<uint64_t>(sb.st_size) != s->info.bytes) {
    ::close(fd);
    throw ShardError(
        dir, *s,
        std::string(static_cast<uint64_t>(sb.st_size) < s->info.bytes ? "truncated" : "too long") +
            ": " + std::to_string(sb.st_size) + " bytes, the manifest says " +
            std::to_string(s->info.bytes));
  }
  s->dev = sb.st_dev;
  s->ino = sb.st_ino;
  s->mtime = sb.st_mtim;
  s->bytes = s->info.bytes;
  s->base = mmap(nullptr, s->bytes, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (s->base == MAP_FAILED) {
    throw ShardError(dir, *s, std::string("cannot map: ") + std::strerror(err));
  }
  s->guard = GuardMapping(s->base, s->bytes, s->path);
}

void TripStore::CheckShard(const std::string& dir, size_t k, Shard* s) {
  const auto bad = [&](const std::string& why) { return ShardError(dir, *s, why); };
  const ShardLayout layout = LayoutOf(s->info.trips, s->info.points);  // checked by MapShard
  const char* b = static_cast<const char*>(s->base);
  ShardHeader h;
  std::memcpy(&h, b, sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) throw bad("not a trip store shard");
  if (h.version != kVersion) {
    throw bad("format version " + std::to_string(h.version) + ", this tteps reads version " +
              std::to_string(kVersion));
  }
  if (Crc32(0, b, offsetof(ShardHeader, header_crc)) != h.header_crc) {
    throw bad("the header's checksum does not match (damaged)");
  }
  if (h.shard != k || h.trips != s->info.trips || h.points != s->info.points ||
      h.first_trip != s->first) {
    throw bad("its header (shard " + std::to_string(h.shard) + ", " + std::to_string(h.trips) +
              " trips from " + std::to_string(h.first_trip) +
              ") differs from the manifest (shard " + std::to_string(k) + ", " +
              std::to_string(s->info.trips) + " trips from " + std::to_string(s->first) + ")");
  }
  s->offsets = reinterpret_cast<const uint64_t*>(b + layout.offsets);
  s->dist = reinterpret_cast<const double*>(b + layout.dist);
  s->time = reinterpret_cast<const double*>(b + layout.time);
  s->driver = reinterpret_cast<const int32_t*>(b + layout.driver);
  s->date = reinterpret_cast<const int32_t*>(b + layout.date);
  s->week = reinterpret_cast<const int32_t*>(b + layout.week);
  s->minute = reinterpret_cast<const int32_t*>(b + layout.minute);
  s->crc = reinterpret_cast<const uint32_t*>(b + layout.crc);
  s->points = reinterpret_cast<const float*>(b + layout.points);
  if (s->offsets[0] != 0 || s->offsets[s->info.trips] != s->info.points) {
    throw bad("its trip offsets do not span its " + std::to_string(s->info.points) +
              " points (damaged)");
  }
}

const TripStore::Shard& TripStore::ShardOf(size_t i, size_t* local) const {
  if (i >= manifest_.trips) {
    throw std::out_of_range("trip " + std::to_string(i) + " of a store of " +
                            std::to_string(manifest_.trips));
  }
  const size_t k =
      std::upper_bound(first_trip_.begin(), first_trip_.end(), i) - first_trip_.begin() - 1;
  *local = i - first_trip_[k];
  return *shards_[k];
}

void TripStore::Damaged(const Shard& s, size_t local, const std::string& why) const {
  // A shard cut short reads as zeros (a fault, or the tail of its last page): the cut is the
  // cause to name.
  ThrowIfMappedReadFailed();
  CheckUnchanged();
  throw DataError("store '" + dir_ + "': shard " + s.info.file + ", trip " + std::to_string(local) +
                  " (trip " + std::to_string(s.first + local) + " of the store): " + why +
                  "; the shard is damaged or was changed " + "(tteps-pack --verify " + dir_ +
                  " checks every shard)");
}

size_t TripStore::length(size_t i) const {
  size_t t = 0;
  const Shard& s = ShardOf(i, &t);
  const uint64_t a = s.offsets[t], b = s.offsets[t + 1];
  if (a > b || b > s.info.points) Damaged(s, t, "its point offsets are out of order");
  return b - a;
}

int64_t TripStore::date_id(size_t i) const {
  size_t t = 0;
  const Shard& s = ShardOf(i, &t);
  if (s.date[t] < 0 || s.date[t] >= kNumDates) Damaged(s, t, "its dateID is out of range");
  return s.date[t];
}

TripView TripStore::at(size_t i) const {
  const int64_t now = NowNs();
  if (now >= next_check_ns_.load(std::memory_order_relaxed)) {
    next_check_ns_.store(now + 2'000'000'000, std::memory_order_relaxed);
    CheckUnchanged();
  }
  size_t t = 0;
  const Shard& s = ShardOf(i, &t);
  const uint64_t a = s.offsets[t], b = s.offsets[t + 1];
  if (a > b || b > s.info.points) Damaged(s, t, "its point offsets are out of order");
  TripView v;
  v.length = b - a;
  const float* block = s.points + kSequences * a;
  v.driver_id = s.driver[t];
  v.date_id = s.date[t];
  v.week_id = s.week[t];
  v.time_id = s.minute[t];
  v.dist = s.dist[t];
  v.time = s.time[t];
  if (TripCrc(block, v.length, v.dist, v.time, s.driver[t], s.date[t], s.week[t], s.minute[t]) !=
      s.crc[t]) {
    Damaged(s, t, "its checksum does not match");
  }
  // What the JSON reader refuses, a store written by anything else must not bring in either.
  if (v.driver_id < 0 || v.driver_id >= kNumDrivers || v.date_id < 0 || v.date_id >= kNumDates ||
      v.week_id < 0 || v.week_id >= kNumWeekdays || v.time_id < 0 || v.time_id >= kNumMinutes) {
    Damaged(s, t, "an id is out of range");
  }
  v.lngs = block;
  v.lats = block + v.length;
  v.states = block + 2 * v.length;
  v.time_gap = block + 3 * v.length;
  v.dist_gap = block + 4 * v.length;
  ThrowIfMappedReadFailed();
  return v;
}

void TripStore::ExpectAccess(bool random) const {
  for (const auto& s : shards_) madvise(s->base, s->bytes, random ? MADV_RANDOM : MADV_NORMAL);
}

void TripStore::CheckUnchanged() const {
  for (const auto& s : shards_) {
    struct stat sb {};
    std::string why;
    if (::stat(s->path.c_str(), &sb) != 0) {
      why = std::string("it is gone (") + std::strerror(errno) + ")";
    } else if (sb.st_dev != s->dev || sb.st_ino != s->ino) {
      why = "it was replaced by another file";
    } else if (static_cast<uint64_t>(sb.st_size) != s->bytes) {
      why = "its size changed from " + std::to_string(s->bytes) + " to " +
            std::to_string(sb.st_size) + " bytes";
    } else if (sb.st_mtim.tv_sec != s->mtime.tv_sec || sb.st_mtim.tv_nsec != s->mtime.tv_nsec) {
      why = "it was modified";
    }
    if (!why.empty()) {
      throw DataError("store '" + dir_ + "': shard " + s->info.file + " changed under the " +
                      "running job: " + why);
    }
  }
}

uint64_t TripStore::mapped_bytes() const {
  uint64_t n = 0;
  for (const auto& s : shards_) n += s->bytes;
  return n;
}

std::string TripStore::stats_path() const { return Join(dir_, kStats); }

void VerifyTripStore(const std::string& dir, void (*progress)(size_t, uint64_t, void*), void* arg) {
  const StoreManifest m = ReadStoreManifest(dir);
  std::vector<char> buffer(8 << 20);
  uint64_t done = 0;
  for (size_t k = 0; k < m.shards.size(); ++k) {
    const StoreShardInfo& s = m.shards[k];
    const std::string path = Join(dir, s.file);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      throw DataError("store '" + dir + "': shard " + s.file +
                      ": cannot open: " + std::strerror(errno));
    }
    uint32_t crc = 0;
    uint64_t bytes = 0;
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const auto n = static_cast<size_t>(in.gcount());
      crc = Crc32(crc, buffer.data(), n);
      bytes += n;
    }
    if (bytes != s.bytes) {
      throw DataError("store '" + dir + "': shard " + s.file + ": " + std::to_string(bytes) +
                      " bytes, the manifest says " + std::to_string(s.bytes) +
                      (bytes < s.bytes ? " (truncated)" : ""));
    }
    if (crc != s.crc) {
      throw DataError("store '" + dir + "': shard " + s.file + ": checksum " + CrcText(crc) +
                      ", the manifest says " + CrcText(s.crc) + " (damaged)");
    }
    done += bytes;
    if (progress) progress(k + 1, done, arg);
  }
  const auto st = TripStore::Open(dir);
  for (size_t i = 0; i < st->size(); ++i) st->length(i);  // every trip's offsets in order
}

}  // namespace tteps::data
