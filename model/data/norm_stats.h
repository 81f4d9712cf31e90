// Normalisation statistics (the format of data/chengdu/stats.json) and how to compute them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/data/data_error.h"
#include "model/data/trip.h"
#include "model/data/trips.h"

namespace tteps::data {

struct NormStats {
  double dist_mean = 0, dist_std = 1, time_mean = 0, time_std = 1;  // over trips
  double lngs_mean = 0, lngs_std = 1, lats_mean = 0, lats_std = 1;  // over all points
  // Over the per-hop differences time_gap[i+1] - time_gap[i] (s) and likewise dist_gap (km).
  double time_gap_mean = 0, time_gap_std = 1, dist_gap_mean = 0, dist_gap_std = 1;
};

// A missing key, non-number, non-positive std or bad JSON throws DataError naming file and key.
NormStats LoadNormStats(const std::string& path);

// Writes the stats.json format (keys sorted, one per line); throws DataError on failure.
void SaveNormStats(const NormStats& s, const std::string& path);

// Streaming computation, for data sets too big to hold: the same trips added in the same order
// give the same statistics to the last bit. Standard deviations are population ones.
class NormStatsAccumulator {
 public:
  void Add(const TripView& trip);
  void Add(const Trip& trip);
  // Throws DataError if no trips were added or a standard deviation would be 0.
  NormStats Finish() const;
  uint64_t trips() const { return dist_.count; }

 private:
  // Sums of the values less the first one (a shift near the mean keeps the sums exact enough
  // and the adds free of divisions: a pack's statistics cost little beside parsing).
  struct Running {
    uint64_t count = 0;
    double shift = 0, sum = 0, sum_sq = 0;
    void Add(double x) {
      if (count++ == 0) shift = x;
      const double d = x - shift;
      sum += d;
      sum_sq += d * d;
    }
    double Mean() const;
    double M2() const;  // the sum of squared deviations from the mean
    double Std() const;
  };
  Running dist_, time_, lngs_, lats_, time_gap_, dist_gap_;
};

// Throws DataError if `trips` is empty or a standard deviation would be 0. The trips are added
// one by one in their order: the same trips, read from JSON lines or from a store packed from
// them, give the same statistics to the last bit.
NormStats ComputeNormStats(const std::vector<Trip>& trips);
NormStats ComputeNormStats(const Trips& trips);

// Names each statistic of `data` whose mean lies more than `deviations` standard deviations
// of `given` away from `given`'s mean ("lngs: mean 2.35 against 104.058 +- 0.0499"); empty if
// none.
std::vector<std::string> FarStatistics(const NormStats& given, const NormStats& data,
                                       double deviations);

}  // namespace tteps::data
