// Streams validated trips from JSON-lines files, one line at a time.
#pragma once

#include <cstddef>
#include <fstream>
#include <string>
#include <vector>

#include "model/data/data_error.h"
#include "model/data/trip.h"
#include "model/data/trip_parser.h"

namespace tteps::data {

enum class BadRecordPolicy { kFail, kSkip };

// "fail" or "skip"; anything else throws std::invalid_argument naming the allowed values.
BadRecordPolicy ParseBadRecordPolicy(const std::string& s);

struct ReadOptions {
  BadRecordPolicy bad_records = BadRecordPolicy::kFail;
  TripLimits limits;  // min_points = the model's kernel_size
};

struct ReadReport {
  static constexpr size_t kMaxBadListed = 10;

  std::string file;
  size_t lines = 0;                            // lines read, bad ones included
  size_t records = 0;                          // valid trips returned
  size_t skipped = 0;                          // bad records skipped (kSkip only)
  std::vector<size_t> first_bad_lines;         // up to kMaxBadListed, 1-based line numbers
  std::vector<std::string> first_bad_reasons;  // same length; full error text

  // One line, e.g. "data/x.jsonl: 1198 trips, 2 bad records skipped (lines 5, 9; first: ...)".
  std::string Summary() const;
};

// Every bad record's error text reads "<file>:<line>: field '<key>': <reason>".
class TripReader {
 public:
  // Throws DataError naming the file if it can't be opened.
  TripReader(const std::string& path, ReadOptions opts);

  // Reads the next valid trip into *trip; false at the end of the file. With kFail, throws
  // DataError on the first bad record; with kSkip, counts it in the report and goes on.
  bool Next(Trip* trip);

  const ReadReport& report() const { return report_; }

 private:
  std::ifstream in_;
  ReadOptions opts_;
  ReadReport report_;
  TripParser parser_;
  std::string line_;
};

std::vector<Trip> ReadTrips(const std::string& path, const ReadOptions& opts,
                            ReadReport* report = nullptr);

// The trips of all files, in order; one report per file.
std::vector<Trip> ReadTripFiles(const std::vector<std::string>& paths, const ReadOptions& opts,
                                std::vector<ReadReport>* reports = nullptr);

}  // namespace tteps::data
