#include "model/data/trip_store_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/json_writer.h"
#include "model/data/data_error.h"
#include "model/data/trip_store_format.h"

namespace tteps::data {
namespace {

using namespace store;

// A file written with write(2), every failure thrown with the system's reason.
class OutFile {
 public:
  // With `direct`, writes bypass the page cache where the file system allows (O_DIRECT): the
  // store is written once and read later, and copying 7.4 GB into the page cache cost a quarter
  // of packing's CPU time.
  OutFile(std::string path, bool direct) : path_(std::move(path)) {
    const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    fd_ = direct ? ::open(path_.c_str(), flags | O_DIRECT, 0644) : -1;
    direct_ = fd_ >= 0;
    if (fd_ < 0) fd_ = ::open(path_.c_str(), flags, 0644);  // e.g. tmpfs refuses O_DIRECT
    if (fd_ < 0) Fail("cannot create");
  }
  ~OutFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  void Write(const void* data, size_t bytes) {
    WriteAll(static_cast<const char*>(data), bytes);
    crc_ = Crc32(crc_, data, bytes);
    size_ += bytes;
  }
  // The first `bytes` of `image`, which may be changed (zeroed past `bytes`).
  void WriteImage(const AlignedBuffer& image, size_t bytes) {
    crc_ = Crc32(crc_, image.data(), bytes);
    size_ += bytes;
    const size_t whole =
        (bytes + AlignedBuffer::kAlign - 1) / AlignedBuffer::kAlign * AlignedBuffer::kAlign;
    if (direct_ && whole <= image.capacity()) {
      std::memset(image.data() + bytes, 0, whole - bytes);
      if (WriteAll(image.data(), whole) && ::ftruncate(fd_, static_cast<off_t>(bytes)) == 0) {
        return;
      }
      if (direct_) Fail("cannot write");
      // O_DIRECT was refused after all: start over through the page cache.
      if (::ftruncate(fd_, 0) != 0 || ::lseek(fd_, 0, SEEK_SET) != 0) Fail("cannot write");
    }
    WriteAll(image.data(), bytes);
  }
  // Closes the file; with `sync`, after its bytes are on the disk. Without, the write-back starts
  // now (not waited for), so that the fsync before the manifest finds little left to do.
  void Close(bool sync) {
    if (!sync)
      ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);  // advice: errors change nothing
    const int rc = sync && ::fsync(fd_) != 0 ? errno : 0;
    const bool closed = ::close(fd_) == 0;
    fd_ = -1;
    if (rc != 0 || !closed) {
      errno = rc ? rc : errno;
      Fail("cannot write");
    }
  }
  uint32_t crc() const { return crc_; }
  uint64_t size() const { return size_; }

 private:
  // False (and direct_ cleared) only where O_DIRECT refuses the transfer (EINVAL).
  bool WriteAll(const char* p, size_t bytes) {
    for (size_t left = bytes; left > 0;) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL && direct_) {
        direct_ = false;
        ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_DIRECT);
        return false;
      }
      if (n <= 0) Fail("cannot write");
      p += n;
      left -= static_cast<size_t>(n);
    }
    return true;
  }
  [[noreturn]] void Fail(const char* what) {
    throw DataError(std::string(what) + " '" + path_ + "': " + std::strerror(errno));
  }
  std::string path_;
  int fd_ = -1;
  bool direct_ = false;
  uint32_t crc_ = 0;
  uint64_t size_ = 0;
};

// Waits until the file's bytes are on the disk.
void SyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const int rc = fd < 0 || ::fsync(fd) != 0 ? errno : 0;
  if (fd >= 0) ::close(fd);
  if (rc != 0) throw DataError("cannot write '" + path + "': " + std::strerror(rc));
}

}  // namespace

void TripColumns::Add(const Trip& t) {
  const uint64_t n = t.length();
  lengths.push_back(n);
  dist.push_back(t.dist);
  time.push_back(t.time);
  driver.push_back(static_cast<int32_t>(t.driver_id));
  date.push_back(static_cast<int32_t>(t.date_id));
  week.push_back(static_cast<int32_t>(t.week_id));
  minute.push_back(static_cast<int32_t>(t.time_id));
  const size_t at = points.size();
  for (const auto* seq : {&t.lngs, &t.lats, &t.states, &t.time_gap, &t.dist_gap}) {
    points.insert(points.end(), seq->begin(), seq->end());
  }
  crc.push_back(TripCrc(points.data() + at, n, t.dist, t.time, driver.back(), date.back(),
                        week.back(), minute.back()));
}

void TripColumns::Clear() {
  lengths.clear();
  dist.clear();
  time.clear();
  for (auto* v : {&driver, &date, &week, &minute}) v->clear();
  crc.clear();
  points.clear();
}

TripStoreWriter::TripStoreWriter(std::string dir, uint64_t shard_trips, int64_t min_points)
    : dir_(std::move(dir)), shard_trips_(shard_trips), min_points_(min_points) {
  if (shard_trips_ == 0) throw DataError("a shard must hold at least one trip");
  std::error_code ec;
  if (std::filesystem::exists(dir_, ec) && !std::filesystem::is_empty(dir_, ec)) {
    throw DataError("the store directory '" + dir_ + "' exists and is not empty");
  }
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw DataError("cannot create the store directory '" + dir_ + "': " + ec.message());
}

void TripStoreWriter::Append(const TripColumns& c) {
  size_t point_at = 0;  // into c.points: trip i's first float
  for (size_t i = 0; i < c.size(); ++i) {
    const size_t floats = kSequences * c.lengths[i];
    shard_.lengths.push_back(c.lengths[i]);
    shard_.dist.push_back(c.dist[i]);
    shard_.time.push_back(c.time[i]);
    shard_.driver.push_back(c.driver[i]);
    shard_.date.push_back(c.date[i]);
    shard_.week.push_back(c.week[i]);
    shard_.minute.push_back(c.minute[i]);
    shard_.crc.push_back(c.crc[i]);
    shard_.points.insert(shard_.points.end(), c.points.begin() + point_at,
                         c.points.begin() + point_at + floats);
    point_at += floats;
    if (shard_.size() == shard_trips_) WriteShard();
  }
}

void TripStoreWriter::WriteShard() {
  const uint64_t trips = shard_.size(), points = shard_.points.size() / kSequences;
  const auto index = static_cast<uint32_t>(written_.size());
  const std::string file = ShardFileName(index);
  ShardHeader h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kVersion;
  h.shard = index;
  h.trips = trips;
  h.points = points;
  h.first_trip = trips_;
  h.header_crc = Crc32(0, &h, offsetof(ShardHeader, header_crc));
  const ShardLayout layout = LayoutOf(trips, points);
  if (image_.capacity() < layout.total + AlignedBuffer::kAlign) {
    image_ = AlignedBuffer(layout.total + layout.total / 8 + AlignedBuffer::kAlign);
  }
  char* image = image_.data();
  std::memset(image, 0, layout.points);  // the header's and the columns' padding
  std::memcpy(image, &h, sizeof(h));
  auto* offsets = reinterpret_cast<uint64_t*>(image + layout.offsets);
  offsets[0] = 0;
  for (size_t i = 0; i < trips; ++i) offsets[i + 1] = offsets[i] + shard_.lengths[i];
  const auto put = [&](size_t at, const auto& v) {
    std::memcpy(image + at, v.data(), v.size() * sizeof(v[0]));
  };
  put(layout.dist, shard_.dist);
  put(layout.time, shard_.time);
  put(layout.driver, shard_.driver);
  put(layout.date, shard_.date);
  put(layout.week, shard_.week);
  put(layout.minute, shard_.minute);
  put(layout.crc, shard_.crc);
  put(layout.points, shard_.points);
  OutFile out((std::filesystem::path(dir_) / file).string(), /*direct=*/true);
  out.WriteImage(image_, layout.total);
  out.Close(/*sync=*/false);
  written_.push_back({file, trips, points, out.size(), out.crc()});
  identity_ = Crc32(identity_, shard_.crc.data(), shard_.crc.size() * sizeof(uint32_t));
  trips_ += trips;
  points_ += points;
  bytes_ += out.size();
  shard_.Clear();
}

std::string TripStoreWriter::Finish(const NormStats& stats,
                                    const std::vector<PackSource>& sources) {
  if (shard_.size() > 0) WriteShard();
  // The manifest marks the store complete, so it is written after every shard is on the disk.
  for (const Written& w : written_) SyncFile((std::filesystem::path(dir_) / w.file).string());
  SaveNormStats(stats, (std::filesystem::path(dir_) / kStats).string());
  // The store's identity: the format and its trips (their checksums, in order), not where or
  // when it was packed, nor how it was cut into shards.
  uint32_t id = Crc32(0, &kVersion, sizeof(kVersion));
  id = Crc32(id, &trips_, sizeof(trips_));
  id = Crc32(id, &identity_, sizeof(identity_));
  std::vector<std::string> shards;
  for (const Written& w : written_) {
    shards.push_back(JsonObject()
                         .Add("file", w.file)
                         .Add("trips", w.trips)
                         .Add("points", w.points)
                         .Add("bytes", w.bytes)
                         .Add("crc32c", CrcText(w.crc))
                         .str());
  }
  std::string shard_list = "[";
  for (size_t i = 0; i < shards.size(); ++i) shard_list += (i ? ",\n    " : "\n    ") + shards[i];
  shard_list += "\n  ]";
  std::string source_list = "[";
  for (size_t i = 0; i < sources.size(); ++i) {
    const PackSource& s = sources[i];
    source_list += (i ? ",\n    " : "\n    ") + JsonObject()
                                                    .Add("path", s.path)
                                                    .Add("bytes", s.bytes)
                                                    .Add("mtime_s", s.mtime_s)
                                                    .Add("lines", s.lines)
                                                    .Add("trips", s.trips)
                                                    .Add("skipped", s.skipped)
                                                    .str();
  }
  source_list += "\n  ]";
  const std::string checksum = CrcText(id);
  const std::string manifest =
      "{\n  \"format\": " + JsonQuote(kFormatName) +
      ",\n  \"version\": " + std::to_string(kVersion) +
      ",\n  \"trips\": " + std::to_string(trips_) + ",\n  \"points\": " + std::to_string(points_) +
      ",\n  \"min_points\": " + std::to_string(min_points_) +
      ",\n  \"checksum\": " + JsonQuote(checksum) + ",\n  \"stats\": " + JsonQuote(kStats) +
      ",\n  \"shards\": " + shard_list + ",\n  \"sources\": " + source_list + "\n}\n";
  OutFile out((std::filesystem::path(dir_) / kManifest).string(), /*direct=*/false);
  out.Write(manifest.data(), manifest.size());
  out.Close(/*sync=*/true);
  return checksum;
}

}  // namespace tteps::data
