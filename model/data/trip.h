// One taxi trip in the DeepTTE JSON-lines format (see data/chengdu/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tteps::data {

// Ranges of the categorical ids (exclusive upper bounds): the embedding table sizes.
inline constexpr int64_t kNumDrivers = 24000;
inline constexpr int64_t kNumDates = 31;
inline constexpr int64_t kNumWeekdays = 7;
inline constexpr int64_t kNumMinutes = 1440;

struct Trip {
  int64_t driver_id = 0, date_id = 0, week_id = 0, time_id = 0;
  double dist = 0;  // km, total
  double time = 0;  // s, total travel time (label)
  // Per point; time_gap s, dist_gap km (cumulative from the first point).
  std::vector<float> lngs, lats, states, time_gap, dist_gap;
  size_t length() const { return lngs.size(); }
};

}  // namespace tteps::data
