// Parses and validates one JSON line of the trip format into a Trip.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "model/data/trip.h"

namespace tteps::data {

// What a trip may be, beyond the format: points to compute on, and physical ranges (a trip of
// 1e30 s would train silently and turn the RMSE into 2.9e28; one of 20,000 points would stall a
// step until the job read it as a network failure). Longitudes and latitudes are checked
// against the globe's.
struct TripLimits {
  size_t min_points = 3;      // the model's kernel_size
  size_t max_points = 2000;   // --max_points (the sample's longest trip has 116)
  double max_time_s = 86400;  // --max_trip_s: the label, `time`
  double max_dist_km = 1000;  // --max_trip_km: `dist`
  // Routes to estimate rather than trips to learn from: `time`, `time_gap` and `dateID` may be
  // missing (0 then), as they are before a trip is driven (the model's estimate reads none of
  // them); an "id" field is kept (TripParser::id).
  bool routes = false;
};

// Reusable (keeps its buffers between lines); not thread-safe.
class TripParser {
 public:
  explicit TripParser(size_t min_points);
  explicit TripParser(const TripLimits& limits);
  ~TripParser();
  TripParser(TripParser&&) noexcept;
  TripParser& operator=(TripParser&&) noexcept;

  // Fills *trip and returns true if `line` is a valid record. Otherwise returns false and sets
  // *error to "field '<key>': <reason>" (key '<json>' for syntax errors and empty lines);
  // *trip is then unspecified.
  bool Parse(std::string_view line, Trip* trip, std::string* error);
  // Parse, in place: at least kPadding readable bytes (of any value) follow `line` in memory.
  static constexpr size_t kPadding = 64;
  bool ParsePadded(std::string_view line, Trip* trip, std::string* error);
  // Routes (TripLimits::routes): the last parsed record's "id", as JSON (a quoted string or an
  // integer), or empty if it had none.
  const std::string& id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tteps::data
