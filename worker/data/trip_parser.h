// Parses and validates one JSON line of the trip format into a Trip.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "worker/data/trip.h"

namespace tteps::data {

// Reusable (keeps its buffers between lines); not thread-safe.
class TripParser {
 public:
  explicit TripParser(size_t min_points);
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tteps::data
