#include "model/data/padded_batch.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace tteps::data {
namespace {

Trip MakeTrip(int64_t driver, size_t n, float base) {
  Trip t;
  t.driver_id = driver;
  t.week_id = 2;
  t.time_id = 600 + driver;
  t.dist = 10 + driver;
  t.time = 1000 + driver;
  for (size_t i = 0; i < n; ++i) {
    t.lngs.push_back(base + i);
    t.lats.push_back(30 + i);
    t.states.push_back(i % 2);
    t.time_gap.push_back(10.0f * i);
    t.dist_gap.push_back(0.25f * i);
  }
  return t;
}

TEST(MakeBatch, PadsNormalisesAndKeepsOrder) {
  const TripVector trips({MakeTrip(1, 3, 104), MakeTrip(2, 2, 106), MakeTrip(3, 4, 100)});
  NormStats stats;
  stats.dist_mean = 10;
  stats.dist_std = 4;
  stats.lngs_mean = 104;
  stats.lngs_std = 2;
  stats.lats_mean = 30;
  stats.lats_std = 0.5;
  const PaddedBatch b = MakeBatch(trips, {1, 0}, stats);
  EXPECT_EQ(b.size, 2);
  EXPECT_EQ(b.max_len, 3);
  EXPECT_EQ(b.lengths, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b.total_points(), 5);
  EXPECT_EQ(b.driver_id, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(b.week_id, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(b.time_id, (std::vector<int64_t>{602, 601}));
  EXPECT_EQ(b.dist, (std::vector<float>{0.5f, 0.25f}));  // (12 - 10) / 4, (11 - 10) / 4
  EXPECT_EQ(b.time, (std::vector<float>{1002, 1001}));   // raw seconds
  // Row 0 is trip 1 (2 points + 1 zero of padding), row 1 is trip 0 (3 points).
  EXPECT_EQ(b.lngs, (std::vector<float>{1, 1.5f, 0, 0, 0.5f, 1}));
  EXPECT_EQ(b.lats, (std::vector<float>{0, 2, 0, 0, 2, 4}));
  EXPECT_EQ(b.states, (std::vector<float>{0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(b.time_gap, (std::vector<float>{0, 10, 0, 0, 10, 20}));
  EXPECT_EQ(b.dist_gap, (std::vector<float>{0, 0.25f, 0, 0, 0.25f, 0.5f}));
}

TEST(MakeBatch, EdgeCases) {
  const TripVector trips({MakeTrip(1, 3, 104)});
  const PaddedBatch empty = MakeBatch(trips, {}, NormStats{});
  EXPECT_EQ(empty.size, 0);
  EXPECT_EQ(empty.max_len, 0);
  EXPECT_EQ(empty.total_points(), 0);
  EXPECT_TRUE(empty.lngs.empty());
  EXPECT_THROW(MakeBatch(trips, {1}, NormStats{}), std::out_of_range);
  std::vector<Trip> uneven = trips.trips();
  uneven[0].states.pop_back();
  EXPECT_THROW(MakeBatch(TripVector(uneven), {0}, NormStats{}), std::invalid_argument);
}

}  // namespace
}  // namespace tteps::data
