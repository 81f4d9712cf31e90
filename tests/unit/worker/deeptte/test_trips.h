// Trips for model tests: the shipped sample, read once.
#pragma once

#include <vector>

#include "worker/data/norm_stats.h"
#include "worker/data/trip_reader.h"

namespace tteps::testing_util {

inline const std::vector<data::Trip>& SampleTrips() {
  static const auto* trips = new std::vector<data::Trip>(
      data::ReadTrips(TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl", data::ReadOptions{}));
  return *trips;
}

inline data::NormStats SampleStats() {
  return data::LoadNormStats(TTEPS_SOURCE_DIR "/data/chengdu/stats.json");
}

}  // namespace tteps::testing_util
