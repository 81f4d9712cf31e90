// The on-disk layout of a trip store (tteps-pack writes it, TripStore maps it). A store is a
// directory: manifest.json (format, counts, every shard's size and checksum, the sources),
// stats.json (normalisation statistics of its trips) and shard-NNNNN.bin files, each holding a
// contiguous range of trips. A shard is columnar:
//
//   header       64 bytes (ShardHeader)
//   offsets      uint64[trips + 1]  first point of each trip, in points from the shard's first
//   dist, time   float64[trips] each (km, s)
//   driver, date, week, minute   int32[trips] each
//   crc          uint32[trips]      CRC-32C of the trip's points and attributes (TripCrc)
//   (zero padding to 8 bytes)
//   points       float32[5 * points]  per trip one block: lngs, lats, states, time_gap, dist_gap,
//                                     each `length` floats
//
// Little-endian, as written by the x86-64 and AArch64 machines tteps runs on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/file_formats.h"

namespace tteps::data::store {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the store format is little-endian");

inline constexpr char kMagic[8] = {'T', 'T', 'E', 'P', 'S', 'T', 'R', 'P'};
inline constexpr uint32_t kVersion = kTripStoreFormat;  // common/file_formats.h
inline constexpr char kManifest[] = "manifest.json";
inline constexpr char kStats[] = "stats.json";
inline constexpr char kFormatName[] = "tteps-trips";
inline constexpr int kSequences = 5;  // lngs, lats, states, time_gap, dist_gap

struct ShardHeader {
  char magic[8];
  uint32_t version;
  uint32_t shard;       // its index in the store
  uint64_t trips;       // in this shard
  uint64_t points;      // in this shard
  uint64_t first_trip;  // the store-wide index of its first trip
  uint64_t reserved[2];
  uint32_t reserved32;
  uint32_t header_crc;  // CRC-32C of the 60 bytes before it
};
static_assert(sizeof(ShardHeader) == 64, "the header is 64 bytes");

// Byte offsets of a shard's sections.
struct ShardLayout {
  size_t offsets, dist, time, driver, date, week, minute, crc, points, total;
};

inline ShardLayout LayoutOf(uint64_t trips, uint64_t points) {
  ShardLayout l{};
  size_t at = sizeof(ShardHeader);
  const auto take = [&](size_t bytes) {
    const size_t here = at;
    at += bytes;
    return here;
  };
  l.offsets = take(8 * (trips + 1));
  l.dist = take(8 * trips);
  l.time = take(8 * trips);
  l.driver = take(4 * trips);
  l.date = take(4 * trips);
  l.week = take(4 * trips);
  l.minute = take(4 * trips);
  l.crc = take(4 * trips);
  at = (at + 7) / 8 * 8;
  l.points = take(4 * kSequences * points);
  l.total = at;
  return l;
}

inline std::string ShardFileName(uint32_t shard) {
  char name[32];
  std::snprintf(name, sizeof(name), "shard-%05u.bin", shard);
  return name;
}

// CRC-32C of one trip: its point block, then its attributes and length.
uint32_t TripCrc(const float* block, uint64_t length, double dist, double time, int32_t driver,
                 int32_t date, int32_t week, int32_t minute);

// CRC-32C (data/crc32c.h) of `bytes` bytes, continuing `crc` (0 to start).
uint32_t Crc32(uint32_t crc, const void* data, size_t bytes);

// "0x" and 8 hex digits.
std::string CrcText(uint32_t crc);

}  // namespace tteps::data::store
