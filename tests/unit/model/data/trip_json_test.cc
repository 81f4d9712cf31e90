#include "model/data/trip_json.h"

#include <gtest/gtest.h>

#include <string>

#include "model/data/trip_parser.h"

namespace tteps::data {
namespace {

TEST(AppendTripJson, RoundTripsThroughTheParser) {
  Trip t;
  t.driver_id = 23999;
  t.date_id = 30;
  t.week_id = 0;
  t.time_id = 1439;
  t.dist = 8.9579001302;
  t.time = 816;
  t.lngs = {104.077277f, 104.077181f, 103.8f};
  t.lats = {30.615296f, 30.617827f, 30.8f};
  t.states = {1, 0, 1};
  t.time_gap = {0, 20, 61.5f};
  t.dist_gap = {0, 0.2815842543f, 0.6f};
  std::string line;
  AppendTripJson(t, &line);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_NE(line.find(R"("time":816.0,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("time_gap":[0.0,20.0,61.5])"), std::string::npos) << line;

  TripParser parser(3);
  Trip r;
  std::string error;
  ASSERT_TRUE(parser.Parse(line, &r, &error)) << error;
  EXPECT_EQ(r.driver_id, t.driver_id);
  EXPECT_EQ(r.date_id, t.date_id);
  EXPECT_EQ(r.week_id, t.week_id);
  EXPECT_EQ(r.time_id, t.time_id);
  EXPECT_EQ(r.dist, t.dist);
  EXPECT_EQ(r.time, t.time);
  EXPECT_EQ(r.lngs, t.lngs);
  EXPECT_EQ(r.lats, t.lats);
  EXPECT_EQ(r.states, t.states);
  EXPECT_EQ(r.time_gap, t.time_gap);
  EXPECT_EQ(r.dist_gap, t.dist_gap);
}

}  // namespace
}  // namespace tteps::data
