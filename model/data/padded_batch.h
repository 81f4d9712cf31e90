// One batch ready for the model, in plain arrays (the model wraps them with torch::from_blob).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/data/norm_stats.h"
#include "model/data/trips.h"

namespace tteps::data {

// Trips are kept in the given order. Sequences are row-major [size x max_len], zero padded.
struct PaddedBatch {
  int64_t size = 0, max_len = 0;
  std::vector<int64_t> lengths;  // points per trip
  std::vector<int64_t> driver_id, week_id, time_id;
  std::vector<float> dist;                // normalised: (dist - dist_mean) / dist_std
  std::vector<float> time;                // label, raw seconds
  std::vector<float> lngs, lats;          // normalised with lngs/lats stats
  std::vector<float> states;              // raw 0/1
  std::vector<float> time_gap, dist_gap;  // raw cumulative seconds / km
  int64_t total_points() const;           // sum of lengths
};

// Throws std::out_of_range for an index past the trips, std::invalid_argument for a trip whose
// sequences differ in length (DataError for a damaged trip of a store). pad_multiple > 1 rounds
// max_len up to a multiple of it (fewer distinct shapes for a GPU's kernels to plan for; the
// model reads no padded step).
PaddedBatch MakeBatch(const Trips& trips, const std::vector<size_t>& indices,
                      const NormStats& stats, int64_t pad_multiple = 1);

}  // namespace tteps::data
