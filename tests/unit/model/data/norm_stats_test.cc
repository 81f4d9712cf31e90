#include "model/data/norm_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "model/data/trip_reader.h"

namespace tteps::data {
namespace {

const std::string kRoot = TTEPS_SOURCE_DIR;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = testing::TempDir() + "tteps_stats_" + name + ".json";
  std::ofstream(path) << content;
  return path;
}

std::vector<std::string> Keys(const std::string& json) {
  std::vector<std::string> keys;
  const std::regex key("\"(\\w+)\":");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), key); it != std::sregex_iterator();
       ++it) {
    keys.push_back((*it)[1]);
  }
  return keys;
}

Trip MakeTrip(double dist, double time, std::vector<float> lngs, std::vector<float> lats,
              std::vector<float> time_gap, std::vector<float> dist_gap) {
  Trip t;
  t.dist = dist;
  t.time = time;
  t.states.assign(lngs.size(), 1.0f);
  t.lngs = std::move(lngs);
  t.lats = std::move(lats);
  t.time_gap = std::move(time_gap);
  t.dist_gap = std::move(dist_gap);
  return t;
}

TEST(NormStats, LoadsTheShippedFile) {
  const NormStats s = LoadNormStats(kRoot + "/data/chengdu/stats.json");
  EXPECT_DOUBLE_EQ(s.dist_gap_mean, 0.274716042312);
  EXPECT_DOUBLE_EQ(s.dist_gap_std, 0.127051674693);
  EXPECT_DOUBLE_EQ(s.dist_mean, 9.578281194509781);
  EXPECT_DOUBLE_EQ(s.dist_std, 3.9656010701306283);
  EXPECT_DOUBLE_EQ(s.lats_mean, 30.652312982784895);
  EXPECT_DOUBLE_EQ(s.lats_std, 0.04154695076189434);
  EXPECT_DOUBLE_EQ(s.lngs_mean, 104.05810954320589);
  EXPECT_DOUBLE_EQ(s.lngs_std, 0.04988770679679998);
  EXPECT_DOUBLE_EQ(s.time_gap_mean, 43.8756927994);
  EXPECT_DOUBLE_EQ(s.time_gap_std, 51.4811932987);
  EXPECT_DOUBLE_EQ(s.time_mean, 1555.75269436);
  EXPECT_DOUBLE_EQ(s.time_std, 646.373021152);
}

TEST(NormStats, SaveLoadRoundTripInTheShippedFormat) {
  NormStats s;
  s.dist_mean = 1.0 / 3;
  s.dist_std = 0.1;
  s.time_mean = 1555.75269436;
  s.time_std = 646.373021152;
  s.lngs_mean = 104.05810954320589;
  s.lngs_std = 1e-3;
  s.lats_mean = -30.5;
  s.lats_std = 2.5e7;
  s.time_gap_mean = 0;
  s.time_gap_std = 51.4811932987;
  s.dist_gap_mean = 0.274716042312;
  s.dist_gap_std = 0.127051674693;
  const std::string path = testing::TempDir() + "tteps_stats_roundtrip.json";
  SaveNormStats(s, path);
  const NormStats r = LoadNormStats(path);
  EXPECT_EQ(r.dist_mean, s.dist_mean);
  EXPECT_EQ(r.dist_std, s.dist_std);
  EXPECT_EQ(r.time_mean, s.time_mean);
  EXPECT_EQ(r.time_std, s.time_std);
  EXPECT_EQ(r.lngs_mean, s.lngs_mean);
  EXPECT_EQ(r.lngs_std, s.lngs_std);
  EXPECT_EQ(r.lats_mean, s.lats_mean);
  EXPECT_EQ(r.lats_std, s.lats_std);
  EXPECT_EQ(r.time_gap_mean, s.time_gap_mean);
  EXPECT_EQ(r.time_gap_std, s.time_gap_std);
  EXPECT_EQ(r.dist_gap_mean, s.dist_gap_mean);
  EXPECT_EQ(r.dist_gap_std, s.dist_gap_std);
  // Same keys in the same order as the shipped file, and the shipped values print the same way.
  const std::string text = Slurp(path);
  EXPECT_EQ(Keys(text), Keys(Slurp(kRoot + "/data/chengdu/stats.json")));
  EXPECT_NE(text.find("\"dist_gap_mean\": 0.274716042312,\n"), std::string::npos) << text;
}

void ExpectLoadError(const std::string& name, const std::string& content, const std::string& part) {
  const std::string path = WriteTemp(name, content);
  try {
    LoadNormStats(path);
    ADD_FAILURE() << "no DataError for " << name;
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(NormStats, LoadRejectsBadFiles) {
  const std::string shipped = Slurp(kRoot + "/data/chengdu/stats.json");
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = shipped;
    return s.replace(s.find(from), from.size(), to);
  };
  ExpectLoadError("missing", replace("\"time_std\"", "\"time_sd\""), "'time_std': missing");
  ExpectLoadError("zero_std", replace("3.9656010701306283", "0"), "'dist_std'");
  ExpectLoadError("negative_std", replace("0.127051674693", "-0.1"), "'dist_gap_std'");
  ExpectLoadError("string", replace("30.652312982784895", "\"30.6\""), "'lats_mean'");
  ExpectLoadError("bad_json", shipped.substr(0, 40), "invalid JSON");
  ExpectLoadError("not_object", "[1, 2]", "expected a JSON object");
  EXPECT_THROW(LoadNormStats(testing::TempDir() + "tteps_no_such_stats.json"), DataError);
}

TEST(NormStats, ComputesAHandExample) {
  const std::vector<Trip> trips = {
      MakeTrip(2, 100, {1, 2, 3}, {0, 0, 3}, {0, 10, 30}, {0, 1, 3}),
      MakeTrip(4, 300, {4, 5}, {3, 6}, {0, 30}, {0, 3}),
  };
  const NormStats s = ComputeNormStats(trips);
  EXPECT_DOUBLE_EQ(s.dist_mean, 3);
  EXPECT_DOUBLE_EQ(s.dist_std, 1);
  EXPECT_DOUBLE_EQ(s.time_mean, 200);
  EXPECT_DOUBLE_EQ(s.time_std, 100);
  EXPECT_DOUBLE_EQ(s.lngs_mean, 3);
  EXPECT_DOUBLE_EQ(s.lngs_std, std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(s.lats_mean, 2.4);
  EXPECT_DOUBLE_EQ(s.lats_std, std::sqrt(5.04));
  // Gaps: over the per-hop differences 10, 20, 30 s and 1, 2, 3 km.
  EXPECT_DOUBLE_EQ(s.time_gap_mean, 20);
  EXPECT_DOUBLE_EQ(s.time_gap_std, std::sqrt(200.0 / 3));
  EXPECT_DOUBLE_EQ(s.dist_gap_mean, 2);
  EXPECT_DOUBLE_EQ(s.dist_gap_std, std::sqrt(2.0 / 3));

  NormStatsAccumulator acc;
  for (const Trip& t : trips) acc.Add(t);
  EXPECT_EQ(acc.trips(), 2u);
  EXPECT_EQ(acc.Finish().lats_std, s.lats_std);
}

TEST(NormStats, ComputeRejectsDegenerateInput) {
  EXPECT_THROW(ComputeNormStats({}), DataError);
  const Trip t = MakeTrip(2, 100, {1, 2, 3}, {0, 0, 3}, {0, 10, 30}, {0, 1, 3});
  try {
    ComputeNormStats({t, t});  // every dist equal
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("'dist'"), std::string::npos) << e.what();
  }
}

TEST(NormStats, SampleIsCloseToButNotTheShippedStats) {
  const NormStats shipped = LoadNormStats(kRoot + "/data/chengdu/stats.json");
  const NormStats s =
      ComputeNormStats(ReadTrips(kRoot + "/data/chengdu/trajectories.jsonl", ReadOptions{}));
  // Independently computed (Python, from the JSON doubles).
  EXPECT_NEAR(s.time_mean, 1551.59, 1e-9);
  EXPECT_NEAR(s.time_std, 644.4101348520211, 1e-9);
  EXPECT_NEAR(s.time_gap_mean, 45.15248811717916, 1e-9);
  EXPECT_NEAR(s.time_gap_std, 55.2423243880165, 1e-9);
  EXPECT_NEAR(s.dist_gap_mean, 0.27551759236985157, 1e-6);
  EXPECT_NEAR(s.dist_gap_std, 0.12804862103963288, 1e-6);
  EXPECT_NEAR(s.dist_mean, 9.461758616632084, 1e-9);
  EXPECT_NEAR(s.lngs_mean, 104.05783103063436, 1e-5);
  EXPECT_NEAR(s.lats_std, 0.04038590230273934, 1e-5);

  EXPECT_NE(s.time_mean, shipped.time_mean);
  const auto near = [](double a, double b, double rel) {
    return std::abs(a - b) <= rel * std::abs(b);
  };
  EXPECT_TRUE(near(s.time_mean, shipped.time_mean, 0.05));
  EXPECT_TRUE(near(s.dist_mean, shipped.dist_mean, 0.05));
  EXPECT_TRUE(near(s.time_gap_mean, shipped.time_gap_mean, 0.05));
  EXPECT_TRUE(near(s.dist_gap_mean, shipped.dist_gap_mean, 0.05));
  EXPECT_TRUE(near(s.lngs_mean, shipped.lngs_mean, 0.001));
  EXPECT_TRUE(near(s.lats_mean, shipped.lats_mean, 0.001));
  EXPECT_TRUE(near(s.time_std, shipped.time_std, 0.1));
  EXPECT_TRUE(near(s.time_gap_std, shipped.time_gap_std, 0.1));
  EXPECT_TRUE(near(s.dist_gap_std, shipped.dist_gap_std, 0.1));
  EXPECT_TRUE(near(s.lngs_std, shipped.lngs_std, 0.1));
  // The sample is Chengdu's: none of its statistics lies far from DeepTTE's.
  EXPECT_TRUE(FarStatistics(shipped, s, 3).empty());
}

// Another city's trips normalised with Chengdu's statistics: the positions far away are named.
TEST(NormStats, DataFarFromGivenStatisticsIsNamed) {
  const NormStats chengdu = LoadNormStats(kRoot + "/data/chengdu/stats.json");
  NormStats elsewhere = chengdu;
  elsewhere.lngs_mean = 2.35;                                        // Paris
  elsewhere.lats_mean = chengdu.lats_mean + 2.5 * chengdu.lats_std;  // near, within 3
  const std::vector<std::string> far = FarStatistics(chengdu, elsewhere, 3);
  ASSERT_EQ(far.size(), 1u);
  EXPECT_EQ(far[0].rfind("lngs: mean 2.35 against 104.058", 0), 0u) << far[0];
}

}  // namespace
}  // namespace tteps::data
