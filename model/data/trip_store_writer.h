// Writes a trip store (model/data/trip_store_format.h): trips are appended in order and cut
// into shards of a fixed number of trips; Finish writes the statistics and, last, the manifest,
// so a directory without manifest.json is never taken for a store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/data/line_blocks.h"
#include "model/data/norm_stats.h"
#include "model/data/trip.h"

namespace tteps::data {

// Trips in the store's columns, each with its CRC-32C (what a parsing thread hands the writer).
struct TripColumns {
  std::vector<uint64_t> lengths;
  std::vector<double> dist, time;
  std::vector<int32_t> driver, date, week, minute;
  std::vector<uint32_t> crc;
  std::vector<float> points;  // per trip: lngs, lats, states, time_gap, dist_gap

  size_t size() const { return lengths.size(); }
  void Add(const Trip& t);
  void Clear();
};

struct PackSource {
  std::string path;
  uint64_t bytes = 0;
  int64_t mtime_s = 0;
  uint64_t lines = 0, trips = 0, skipped = 0;
};

class TripStoreWriter {
 public:
  // `dir` must not exist or be empty; it is created. Throws DataError.
  TripStoreWriter(std::string dir, uint64_t shard_trips, int64_t min_points);

  // Appends the trips of `c`, writing every shard that fills. Throws DataError (with the
  // system's reason, e.g. "No space left on device") if a file cannot be written.
  void Append(const TripColumns& c);
  // Writes the last shard, stats.json and manifest.json; returns the store's checksum.
  std::string Finish(const NormStats& stats, const std::vector<PackSource>& sources);

  uint64_t trips() const { return trips_ + shard_.size(); }  // appended so far
  uint64_t bytes_written() const { return bytes_; }

 private:
  void WriteShard();

  std::string dir_;
  uint64_t shard_trips_;
  int64_t min_points_;
  TripColumns shard_;
  AlignedBuffer image_;  // a shard's bytes, written in one O_DIRECT transfer where allowed
  uint64_t trips_ = 0, points_ = 0, bytes_ = 0;
  uint32_t identity_ = 0;  // CRC-32C of every trip's CRC in order: the same however sharded
  struct Written {
    std::string file;
    uint64_t trips, points, bytes;
    uint32_t crc;
  };
  std::vector<Written> written_;
};

}  // namespace tteps::data
