#include "model/data/synthetic.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "model/data/norm_stats.h"
#include "model/data/trip_json.h"
#include "model/data/trip_reader.h"

namespace tteps::data {
namespace {

std::string GenerateJson(uint64_t seed, int trips) {
  std::mt19937_64 rng(seed);
  std::string text;
  for (int i = 0; i < trips; ++i) AppendTripJson(GenerateTrip(rng), &text);
  return text;
}

// Generated trips written as JSON and read back with the validating reader (kFail).
std::vector<Trip> GenerateAndRead(uint64_t seed, int trips) {
  const std::string path =
      testing::TempDir() + "tteps_synthetic_" + std::to_string(seed) + ".jsonl";
  std::ofstream(path, std::ios::binary) << GenerateJson(seed, trips);
  return ReadTrips(path, ReadOptions{});
}

TEST(Synthetic, TripsPassValidationAndLookPlausible) {
  const std::vector<Trip> trips = GenerateAndRead(1, 1000);
  ASSERT_EQ(trips.size(), 1000u);
  for (const Trip& t : trips) {
    ASSERT_GE(t.length(), kSyntheticMinPoints);
    ASSERT_LE(t.length(), kSyntheticMaxPoints);
    EXPECT_EQ(t.week_id, (t.date_id + 3) % 7);
    EXPECT_FLOAT_EQ(static_cast<float>(t.time), t.time_gap.back());
    EXPECT_NEAR(t.dist, t.dist_gap.back(), 1e-5);
    EXPECT_EQ(t.time_gap[0], 0.0f);
    EXPECT_EQ(t.dist_gap[0], 0.0f);
    for (size_t i = 0; i < t.length(); ++i) {
      ASSERT_GE(t.lngs[i], kSyntheticBox.min_lng);
      ASSERT_LE(t.lngs[i], kSyntheticBox.max_lng);
      ASSERT_GE(t.lats[i], kSyntheticBox.min_lat);
      ASSERT_LE(t.lats[i], kSyntheticBox.max_lat);
      if (i > 0) {
        ASSERT_GE(t.time_gap[i], t.time_gap[i - 1] + 1);
        ASSERT_GE(t.dist_gap[i], t.dist_gap[i - 1]);
      }
    }
  }
  // Close to the real sample (data/chengdu): hop ~0.275 km, ~35 points, ~1550 s per trip.
  const NormStats s = ComputeNormStats(trips);
  EXPECT_NEAR(s.dist_gap_mean, 0.275, 0.015);
  EXPECT_NEAR(s.dist_gap_std, 0.13, 0.02);
  EXPECT_NEAR(s.dist_mean, 9.5, 1.5);
  EXPECT_NEAR(s.time_mean, 1550, 300);
  EXPECT_NEAR(s.time_gap_mean, 45, 10);
  EXPECT_NEAR(s.lngs_mean, 104.06, 0.02);
  EXPECT_NEAR(s.lats_mean, 30.65, 0.02);
  EXPECT_NEAR(s.lngs_std, 0.05, 0.02);
  EXPECT_NEAR(s.lats_std, 0.04, 0.02);
}

TEST(Synthetic, RushHoursAreSlower) {
  std::mt19937_64 rng(2);
  double rush_km = 0, rush_s = 0, night_km = 0, night_s = 0;
  for (int i = 0; i < 4000; ++i) {
    const Trip t = GenerateTrip(rng);
    if (t.week_id >= 5) continue;
    if (t.time_id >= 17 * 60 + 30 && t.time_id < 18 * 60 + 30) {
      rush_km += t.dist;
      rush_s += t.time;
    } else if (t.time_id >= 22 * 60) {
      night_km += t.dist;
      night_s += t.time;
    }
  }
  ASSERT_GT(rush_s, 0);
  ASSERT_GT(night_s, 0);
  EXPECT_LT(rush_km / rush_s, 0.8 * night_km / night_s);
}

TEST(Synthetic, DeterministicForASeed) {
  EXPECT_EQ(GenerateJson(5, 50), GenerateJson(5, 50));
  EXPECT_NE(GenerateJson(5, 50), GenerateJson(6, 50));
}

}  // namespace
}  // namespace tteps::data
