// tteps-pack's pipeline: JSON-lines files -> trip store. Reads blocks of whole lines, parses
// them on several threads, and writes the trips in input order, so the same input gives the
// same bytes whatever the thread count. Memory stays bounded (a few blocks per thread and one
// shard); the normalisation statistics are computed in the same pass.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/data/trip_reader.h"

namespace tteps::data {

struct PackOptions {
  std::vector<std::string> inputs;
  std::string out_dir;
  BadRecordPolicy bad_records = BadRecordPolicy::kFail;
  TripLimits limits;  // what a trip may be (min_points: the model's kernel_size)
  uint64_t shard_trips = 65536;
  int threads = 1;
  size_t block_bytes = 8 << 20;  // lines are parsed in blocks of about this size
};

struct PackProgress {
  uint64_t bytes_in = 0, bytes_total = 0, trips = 0;
  double seconds = 0;
};

struct PackResult {
  uint64_t trips = 0, bytes_in = 0, bytes_out = 0;
  double seconds = 0;
  std::string checksum;
  std::vector<ReadReport> reports;  // one per input file
};

// Throws DataError: an unreadable input, a bad record under kFail ("<file>:<line>: field
// '<key>': <reason>", the first in input order), a full disk. `progress` (may be empty) is
// called about every half second.
PackResult PackTrips(const PackOptions& opts,
                     const std::function<void(const PackProgress&)>& progress = {});

}  // namespace tteps::data
