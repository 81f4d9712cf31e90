#include "model/data/trip_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tteps::data {
namespace {

std::string SamplePath() {
  return std::string(TTEPS_SOURCE_DIR) + "/data/chengdu/trajectories.jsonl";
}

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = testing::TempDir() + "tteps_reader_" + name + ".jsonl";
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// A valid record; the bad-record cases edit one part of it.
const std::string kGood =
    R"({"driverID":7361,"dateID":24,"weekID":6,"timeID":548,"dist":0.5,"time":30.0,)"
    R"("lngs":[104.0,104.001,104.002],"lats":[30.6,30.601,30.602],"states":[1.0,1,0],)"
    R"("time_gap":[0.0,10.0,30.0],"dist_gap":[0.0,0.25,0.5]})";

std::string With(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const size_t pos = s.find(from);
  if (pos == std::string::npos) throw std::logic_error("test bug: '" + from + "' not in record");
  return s.replace(pos, from.size(), to);
}

TEST(TripReader, ReadsTheWholeSample) {
  ReadReport report;
  const std::vector<Trip> trips = ReadTrips(SamplePath(), ReadOptions{}, &report);
  ASSERT_EQ(trips.size(), 1200u);
  EXPECT_EQ(report.lines, 1200u);
  EXPECT_EQ(report.records, 1200u);
  EXPECT_EQ(report.skipped, 0u);
  EXPECT_EQ(report.Summary(), SamplePath() + ": 1200 trips");
  // The first line of the file.
  const Trip& t = trips[0];
  EXPECT_EQ(t.driver_id, 7361);
  EXPECT_EQ(t.date_id, 24);
  EXPECT_EQ(t.week_id, 6);
  EXPECT_EQ(t.time_id, 548);
  EXPECT_DOUBLE_EQ(t.dist, 8.9579001302);
  EXPECT_DOUBLE_EQ(t.time, 816.0);
  ASSERT_EQ(t.length(), 35u);
  EXPECT_FLOAT_EQ(t.lngs[0], 104.077277f);
  EXPECT_FLOAT_EQ(t.lats[34], 30.629921f);
  EXPECT_FLOAT_EQ(t.time_gap[1], 20.0f);
  EXPECT_FLOAT_EQ(t.dist_gap[1], 0.2815842543f);
  EXPECT_EQ(t.states[32], 1.0f);
  EXPECT_EQ(t.states[33], 0.0f);
  for (const Trip& trip : trips) {
    EXPECT_GE(trip.length(), 15u);
    EXPECT_EQ(trip.lats.size(), trip.length());
    EXPECT_EQ(trip.dist_gap.size(), trip.length());
  }
}

TEST(TripReader, ParsesAValidRecord) {
  const std::string path =
      WriteTemp("valid", With(R"("weekID":6)", R"("extra":{"a":[1]},"weekID":6.0)"));
  const std::vector<Trip> trips = ReadTrips(path, ReadOptions{});
  ASSERT_EQ(trips.size(), 1u);
  const Trip& t = trips[0];
  EXPECT_EQ(t.driver_id, 7361);
  EXPECT_EQ(t.date_id, 24);
  EXPECT_EQ(t.week_id, 6);  // 6.0 is accepted as an integer
  EXPECT_EQ(t.time_id, 548);
  EXPECT_DOUBLE_EQ(t.dist, 0.5);
  EXPECT_DOUBLE_EQ(t.time, 30.0);
  EXPECT_EQ(t.lngs, (std::vector<float>{104.0f, 104.001f, 104.002f}));
  EXPECT_EQ(t.lats, (std::vector<float>{30.6f, 30.601f, 30.602f}));
  EXPECT_EQ(t.states, (std::vector<float>{1, 1, 0}));
  EXPECT_EQ(t.time_gap, (std::vector<float>{0, 10, 30}));
  EXPECT_EQ(t.dist_gap, (std::vector<float>{0, 0.25f, 0.5f}));
}

// Routes (a trip before it is driven): `time`, `time_gap` and `dateID` may be missing, an "id"
// is kept; trips to learn from still need them.
TEST(TripReader, ARouteNeedsNeitherTimeNorTimeGapAndKeepsItsId) {
  const std::string route = [] {
    std::string r = With(R"("time":30.0,)", R"("id":"a\"b",)");
    r.erase(r.find(R"("dateID":24,)"), std::strlen(R"("dateID":24,)"));
    return r.replace(r.find(R"("time_gap")"), std::strlen(R"("time_gap":[0.0,10.0,30.0],)"), "");
  }();
  TripLimits limits;
  limits.routes = true;
  TripParser routes(limits);
  Trip t;
  std::string error;
  ASSERT_TRUE(routes.Parse(route, &t, &error)) << error;
  EXPECT_EQ(routes.id(), R"("a\"b")");
  EXPECT_EQ(t.time, 0);
  EXPECT_EQ(t.date_id, 0);
  EXPECT_EQ(t.time_gap, (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(t.dist_gap, (std::vector<float>{0, 0.25f, 0.5f}));
  ASSERT_TRUE(routes.Parse(With(R"("dist":0.5)", R"("id":12,"dist":0.5)"), &t, &error)) << error;
  EXPECT_EQ(routes.id(), "12");
  EXPECT_EQ(t.time, 30.0);  // a driven trip is a route too
  ASSERT_TRUE(routes.Parse(kGood, &t, &error)) << error;
  EXPECT_EQ(routes.id(), "");
  EXPECT_FALSE(routes.Parse(With(R"("dist":0.5)", R"("id":[1],"dist":0.5)"), &t, &error));
  EXPECT_EQ(error, "field 'id': expected a string or an integer, got an array");
  TripParser trips(3);
  EXPECT_FALSE(trips.Parse(route, &t, &error));
  EXPECT_EQ(error, "field 'dateID': missing");
}

TEST(TripReader, ReusedTripIsReplacedNotAppended) {
  const std::string path = WriteTemp(
      "reuse", kGood + "\n" + With("[1.0,1,0]", "[1,1,1]") + "\r\n" + kGood);  // no final \n
  TripReader reader(path, ReadOptions{});
  Trip t;
  int n = 0;
  while (reader.Next(&t)) {
    ++n;
    EXPECT_EQ(t.length(), 3u);
    EXPECT_EQ(t.states.size(), 3u);
  }
  EXPECT_EQ(n, 3);
  EXPECT_EQ(reader.report().lines, 3u);
}

struct BadCase {
  std::string record;
  std::string field;
  std::string reason;  // a part of the reason
};

TEST(TripReader, EachKindOfBadRecordNamesFileLineAndField) {
  const std::string five_seqs_of_two =
      R"("lngs":[104.0,104.001],"lats":[30.6,30.601],"states":[1,1],"time_gap":[0,10],)"
      R"("dist_gap":[0,0.25]})";
  const std::vector<BadCase> cases = {
      {R"({"driverID":7361,)", "<json>", ""},
      {"[1,2,3]", "<json>", "expected an object, got an array"},
      {"", "<json>", "empty line"},
      {"  \t", "<json>", "empty line"},
      {With(R"("lats":[30.6,30.601,30.602],)", ""), "lats", "missing"},
      {With(R"("driverID":7361)", R"("driverID":"7361")"), "driverID",
       "expected an integer, got a string"},
      {With(R"("weekID":6)", R"("weekID":5.5)"), "weekID", "expected an integer, got 5.5"},
      {With(R"("dist":0.5)", R"("dist":null)"), "dist", "expected a number, got null"},
      {With(R"("time":30.0)", R"("time":[30])"), "time", "expected a number, got an array"},
      {With(R"("lngs":[104.0,104.001,104.002])", R"("lngs":104.0)"), "lngs",
       "expected an array of numbers, got a number"},
      {With("[0.0,10.0,30.0]", R"([0.0,"10",30.0])"), "time_gap",
       "element 1 is a string, expected a number"},
      {With("[30.6,30.601,30.602]", "[30.6,30.601]"), "lats", "length 2 differs from lngs (3)"},
      {With("[1.0,1,0]", "[1,1,0,0]"), "states", "length 4 differs from lngs (3)"},
      {With("[0.0,0.25,0.5]", "[0.0,0.25]"), "dist_gap", "length 2 differs from lngs (3)"},
      {kGood.substr(0, kGood.find(R"("lngs")")) + five_seqs_of_two, "lngs",
       "2 points, fewer than the minimum 3"},
      {With("[104.0,104.001,104.002]", "[104.0,1e300,104.002]"), "lngs",
       "element 1 (1e+300) is not finite"},
      {With(R"("driverID":7361)", R"("driverID":24000)"), "driverID",
       "24000 is out of range [0, 24000)"},
      {With(R"("driverID":7361)", R"("driverID":-1)"), "driverID", "-1 is out of range"},
      {With(R"("dateID":24)", R"("dateID":31)"), "dateID", "31 is out of range [0, 31)"},
      {With(R"("weekID":6)", R"("weekID":7)"), "weekID", "7 is out of range [0, 7)"},
      {With(R"("timeID":548)", R"("timeID":1440)"), "timeID", "1440 is out of range [0, 1440)"},
      {With(R"("timeID":548)", R"("timeID":-3)"), "timeID", "-3 is out of range"},
      {With(R"("time":30.0)", R"("time":-30.0)"), "time", "-30 is negative"},
      {With(R"("dist":0.5)", R"("dist":-0.5)"), "dist", "-0.5 is negative"},
      {With("[0.0,10.0,30.0]", "[0.0,-10.0,30.0]"), "time_gap", "element 1 is negative (-10)"},
      {With("[0.0,0.25,0.5]", "[0.0,0.25,-0.5]"), "dist_gap", "element 2 is negative (-0.5)"},
      {With(R"("time":30.0)", R"("time":0)"), "time", "must be > 0 seconds"},
      {With("[0.0,10.0,30.0]", "[0.0,30.0,10.0]"), "time_gap", "element 2 (10) is below"},
      {With("[0.0,0.25,0.5]", "[0.0,0.5,0.25]"), "dist_gap", "element 2 (0.25) is below"},
      {With("[1.0,1,0]", "[1.0,0.5,0]"), "states", "element 1 is 0.5, expected 0 or 1"},
      {With("[1.0,1,0]", "[1.0,1,2]"), "states", "element 2 is 2, expected 0 or 1"},
      {With("[104.0,104.001,104.002]", "[104.0,1e30,104.002]"), "lngs",
       "element 1 (1e+30) is not a longitude in [-180, 180]"},
      {With("[30.6,30.601,30.602]", "[30.6,95,30.602]"), "lats",
       "element 1 (95) is not a latitude in [-90, 90]"},
      {With(R"("time":30.0)", R"("time":1e30)"), "time",
       "1e+30 s is more than the limit of 86400 s (--max_trip_s)"},
      {With(R"("dist":0.5)", R"("dist":5000)"), "dist",
       "5000 km is more than the limit of 1000 km (--max_trip_km)"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const BadCase& c = cases[i];
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.record);
    // The bad record is line 2, between two good ones.
    const std::string path =
        WriteTemp("bad" + std::to_string(i), kGood + "\n" + c.record + "\n" + kGood + "\n");
    try {
      ReadTrips(path, ReadOptions{});
      ADD_FAILURE() << "no DataError";
    } catch (const DataError& e) {
      const std::string what = e.what();
      const std::string prefix = path + ":2: field '" + c.field + "': ";
      EXPECT_EQ(what.substr(0, prefix.size()), prefix) << what;
      EXPECT_NE(what.find(c.reason, prefix.size()), std::string::npos) << what;
      EXPECT_GT(what.size(), prefix.size()) << what;
    }
  }
}

TEST(TripReader, NumberOverflowingADoubleIsAJsonError) {
  const std::string path = WriteTemp("overflow", With("[0.0,10.0,30.0]", "[0.0,1e999,30.0]"));
  try {
    ReadTrips(path, ReadOptions{});
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ":1: field '<json>': ", 0), 0u) << e.what();
  }
}

// A byte-order mark before the first line is skipped; a compressed file is named as such.
TEST(TripReader, AByteOrderMarkIsSkippedAndACompressedFileNamed) {
  const std::string bom = WriteTemp("bom", "\xef\xbb\xbf" + kGood + "\n" + kGood + "\n");
  EXPECT_EQ(ReadTrips(bom, ReadOptions{}).size(), 2u);
  const std::vector<std::pair<std::string, std::string>> compressed = {
      {"gzip", std::string("\x1f\x8b\x08\x00\x00\x00", 6)},
      {"zstd", std::string("\x28\xb5\x2f\xfd\x00\x00", 6)},
      {"xz", std::string("\xfd"
                         "7zXZ\0",
                         6)},
      {"bzip2", "BZh91AY&SY"}};
  for (const auto& [format, head] : compressed) {
    const std::string path = WriteTemp("packed_" + format, head + "rest");
    try {
      ReadTrips(path, ReadOptions{});
      ADD_FAILURE() << format << ": no DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + path + "' is " + format + "-compressed"),
                std::string::npos)
          << e.what();
    }
  }
}

// A trip longer than --max_points is a bad record named by its line, not a step that stalls.
TEST(TripReader, ATripLongerThanMaxPointsIsABadRecord) {
  std::string line = R"({"driverID":1,"dateID":3,"weekID":2,"timeID":60,"dist":5.0,"time":900.0)";
  const auto sequence = [](double first, double step, size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(first + step * i);
    return s + "]";
  };
  const size_t n = 2001;
  line += ",\"lngs\":" + sequence(104.0, 1e-5, n) + ",\"lats\":" + sequence(30.6, 1e-5, n) +
          ",\"states\":" + sequence(1, 0, n) + ",\"time_gap\":" + sequence(0, 0.4, n) +
          ",\"dist_gap\":" + sequence(0, 0.002, n) + "}";
  const std::string path = WriteTemp("long", kGood + "\n" + line + "\n");
  try {
    ReadTrips(path, ReadOptions{});
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: field 'lngs': 2001 points, more than the "
                                                "maximum 2000 (--max_points)"),
              std::string::npos)
        << e.what();
  }
  ReadOptions unlimited;
  unlimited.limits.max_points = 0;
  EXPECT_EQ(ReadTrips(path, unlimited).size(), 2u);
}

TEST(TripReader, MinPointsIsConfigurable) {
  const std::string path = WriteTemp("min_points", kGood + "\n");
  ReadOptions opts;
  opts.limits.min_points = 4;
  EXPECT_THROW(ReadTrips(path, opts), DataError);
  opts.limits.min_points = 3;
  EXPECT_EQ(ReadTrips(path, opts).size(), 1u);
}

TEST(TripReader, SkipModeCountsReportsAndContinues) {
  const std::string path =
      WriteTemp("skip", kGood + "\n{bad\n" + kGood + "\n\n" + With("[1.0,1,0]", "[1,1,3]") + "\n" +
                            kGood + "\n");
  ReadOptions opts;
  opts.bad_records = BadRecordPolicy::kSkip;
  ReadReport report;
  const std::vector<Trip> trips = ReadTrips(path, opts, &report);
  EXPECT_EQ(trips.size(), 3u);
  EXPECT_EQ(report.file, path);
  EXPECT_EQ(report.lines, 6u);
  EXPECT_EQ(report.records, 3u);
  EXPECT_EQ(report.skipped, 3u);
  EXPECT_EQ(report.first_bad_lines, (std::vector<size_t>{2, 4, 5}));
  ASSERT_EQ(report.first_bad_reasons.size(), 3u);
  EXPECT_EQ(report.first_bad_reasons[0].rfind(path + ":2: field '<json>': ", 0), 0u);
  EXPECT_EQ(report.first_bad_reasons[1], path + ":4: field '<json>': empty line");
  EXPECT_EQ(report.first_bad_reasons[2],
            path + ":5: field 'states': element 2 is 3, expected 0 or 1");
  EXPECT_EQ(
      report.Summary().rfind(
          path + ": 3 trips, 3 bad records skipped (lines 2, 4, 5; first: field '<json>': ", 0),
      0u)
      << report.Summary();
}

TEST(TripReader, SkipModeListsTheFirstTenBadLines) {
  std::string content;
  for (int i = 0; i < 13; ++i) content += "oops\n";
  content += kGood + "\n";
  ReadOptions opts;
  opts.bad_records = BadRecordPolicy::kSkip;
  ReadReport report;
  EXPECT_EQ(ReadTrips(WriteTemp("many_bad", content), opts, &report).size(), 1u);
  EXPECT_EQ(report.skipped, 13u);
  EXPECT_EQ(report.first_bad_lines.size(), 10u);
  EXPECT_EQ(report.first_bad_reasons.size(), 10u);
  EXPECT_EQ(report.first_bad_lines.back(), 10u);
  EXPECT_NE(report.Summary().find(
                "1 trip, 13 bad records skipped (lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 3 more;"),
            std::string::npos)
      << report.Summary();
}

TEST(TripReader, MissingFileIsNamed) {
  const std::string path = testing::TempDir() + "tteps_no_such_file.jsonl";
  try {
    TripReader reader(path, ReadOptions{});
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW(TripReader(testing::TempDir(), ReadOptions{}), DataError);  // a directory
}

TEST(TripReader, ReadsSeveralFilesInOrder) {
  const std::string a = WriteTemp("files_a", kGood + "\n" + kGood + "\n");
  const std::string b = WriteTemp("files_b", With(R"("timeID":548)", R"("timeID":7)") + "\n");
  std::vector<ReadReport> reports;
  const std::vector<Trip> trips = ReadTripFiles({a, b}, ReadOptions{}, &reports);
  ASSERT_EQ(trips.size(), 3u);
  EXPECT_EQ(trips[2].time_id, 7);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].file, a);
  EXPECT_EQ(reports[0].records, 2u);
  EXPECT_EQ(reports[1].records, 1u);
}

TEST(BadRecordPolicy, Parses) {
  EXPECT_EQ(ParseBadRecordPolicy("fail"), BadRecordPolicy::kFail);
  EXPECT_EQ(ParseBadRecordPolicy("skip"), BadRecordPolicy::kSkip);
  try {
    ParseBadRecordPolicy("ignore");
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'fail'"), std::string::npos) << what;
    EXPECT_NE(what.find("'skip'"), std::string::npos) << what;
    EXPECT_NE(what.find("ignore"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tteps::data
