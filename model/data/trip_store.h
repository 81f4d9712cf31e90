// A packed trip store (model/data/trip_store_format.h), memory-mapped and read on demand: a
// process holds no copy of the trips, only the shards' mappings (shared page cache between the
// processes of a host) and a few bytes per shard. Every trip read is checked against its
// CRC-32C, so a damaged shard is named instead of trained on.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/data/data_error.h"
#include "model/data/trips.h"

namespace tteps::data {

// True if `path` is a directory holding a store's manifest.json.
bool IsTripStore(const std::string& path);

struct StoreShardInfo {
  std::string file;  // name inside the store directory
  uint64_t trips = 0, points = 0, bytes = 0;
  uint32_t crc = 0;  // CRC-32C of the whole file
};

struct StoreManifest {
  uint32_t version = 0;
  uint64_t trips = 0, points = 0;
  int64_t min_points = 0;  // the shortest trip the packer accepted
  std::string checksum;    // of the shards' checksums and counts: the store's identity
  std::vector<StoreShardInfo> shards;
};

// Reads and checks DIR/manifest.json; throws DataError naming the file and the reason.
StoreManifest ReadStoreManifest(const std::string& dir);

class TripStore final : public Trips {
 public:
  // Maps every shard after checking its size, header and offsets against the manifest; throws
  // DataError naming the store, the shard and the reason (truncated, wrong format version, ...).
  static std::shared_ptr<const TripStore> Open(const std::string& dir);
  ~TripStore() override;
  TripStore(const TripStore&) = delete;
  TripStore& operator=(const TripStore&) = delete;

  size_t size() const override { return manifest_.trips; }
  // Checks the trip's CRC-32C; every few seconds also that no shard changed since Open.
  TripView at(size_t i) const override;
  size_t length(size_t i) const override;
  int64_t date_id(size_t i) const override;
  void ExpectAccess(bool random) const override;

  const std::string& dir() const { return dir_; }
  const StoreManifest& manifest() const { return manifest_; }
  std::string stats_path() const;
  // Throws DataError naming the shard if one was replaced or modified since Open.
  void CheckUnchanged() const;
  // Bytes of shard files mapped.
  uint64_t mapped_bytes() const;

 private:
  struct Shard;
  explicit TripStore(std::string dir);
  static DataError ShardError(const std::string& dir, const Shard& s, const std::string& why);
  // Opens, checks the size of and maps shard `s` (its info and path set); throws DataError.
  static void MapShard(const std::string& dir, Shard* s);
  // Checks mapped shard `k`'s header against the manifest and points its columns into it.
  static void CheckShard(const std::string& dir, size_t k, Shard* s);
  const Shard& ShardOf(size_t i, size_t* local) const;
  [[noreturn]] void Damaged(const Shard& s, size_t local, const std::string& why) const;

  std::string dir_;
  StoreManifest manifest_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<uint64_t> first_trip_;  // of each shard, for the lookup
  mutable std::atomic<int64_t> next_check_ns_{0};
};

// Reads every shard in full and compares its CRC-32C with the manifest's, then opens the store
// (which checks the headers and every trip's offsets); `progress` (may be null) is called after
// each shard with (shards done, bytes done). Throws DataError naming the first bad shard.
void VerifyTripStore(const std::string& dir,
                     void (*progress)(size_t shards, uint64_t bytes, void* arg) = nullptr,
                     void* arg = nullptr);

}  // namespace tteps::data
