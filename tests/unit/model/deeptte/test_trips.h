// Trips for model tests: the shipped sample, read once.
#pragma once

#include <vector>

#include "model/data/norm_stats.h"
#include "model/data/trip_reader.h"
#include "model/data/trips.h"

namespace tteps::testing_util {

inline const data::TripVector& SampleTrips() {
  static const auto* trips = new data::TripVector(
      data::ReadTrips(TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl", data::ReadOptions{}));
  return *trips;
}

// Trips [begin, end) of the sample.
inline data::TripVector SampleSlice(size_t begin, size_t end) {
  const auto& all = SampleTrips().trips();
  return data::TripVector({all.begin() + begin, all.begin() + end});
}

inline data::NormStats SampleStats() {
  return data::LoadNormStats(TTEPS_SOURCE_DIR "/data/chengdu/stats.json");
}

}  // namespace tteps::testing_util
