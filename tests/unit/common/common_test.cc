#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/json_writer.h"
#include "common/progress.h"
#include "common/run_output.h"
#include "common/split_list.h"
#include "worker/param_layout.h"

namespace tteps {
namespace {

TEST(JsonObject, WritesTypesInOrderAndEscapes) {
  JsonObject o;
  o.Add("s", "a\"b\\c\n").Add("i", int64_t{-3}).Add("d", 0.5).Add("b", true);
  o.Add("nan", std::nan("")).Add("arr", std::vector<double>{1, 2.5});
  o.Add("obj", JsonObject().Add("x", 1));
  EXPECT_EQ(o.str(),
            "{\"s\":\"a\\\"b\\\\c\\n\",\"i\":-3,\"d\":0.5,\"b\":true,\"nan\":null,"
            "\"arr\":[1,2.5],\"obj\":{\"x\":1}}");
}

TEST(RunOutput, AppendsMetricsAndWritesSummary) {
  const std::string dir = ::testing::TempDir() + "/tteps_run_output_test/sub";
  {
    RunOutput out(dir);
    out.AppendMetrics(JsonObject().Add("step", 1));
    out.AppendMetrics(JsonObject().Add("step", 2));
    out.WriteSummary(JsonObject().Add("mode", "local"));
  }
  std::ifstream m(dir + "/metrics.jsonl");
  std::stringstream ms;
  ms << m.rdbuf();
  EXPECT_EQ(ms.str(), "{\"step\":1}\n{\"step\":2}\n");
  std::ifstream s(dir + "/summary.json");
  std::stringstream ss;
  ss << s.rdbuf();
  EXPECT_EQ(ss.str(), "{\"mode\":\"local\"}\n");
}

TEST(Progress, FormatsDurations) {
  EXPECT_EQ(FormatDuration(12.2), "12s");
  EXPECT_EQ(FormatDuration(187), "3m07s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
}

TEST(ParamLayout, OffsetsAndFingerprint) {
  ParamLayout a({{"w", {2, 3}}, {"b", {3}}});
  ASSERT_EQ(a.entries().size(), 2u);
  EXPECT_EQ(a.entries()[1].offset, 6);
  EXPECT_EQ(a.total(), 9);
  EXPECT_EQ(ParamLayout({{"w", {2, 3}}, {"b", {3}}}).fingerprint(), a.fingerprint());
  EXPECT_NE(ParamLayout({{"w", {3, 2}}, {"b", {3}}}).fingerprint(), a.fingerprint());
  EXPECT_NE(ParamLayout({{"w", {2, 3}}, {"c", {3}}}).fingerprint(), a.fingerprint());
  EXPECT_NE(ParamLayout({{"b", {3}}, {"w", {2, 3}}}).fingerprint(), a.fingerprint());
}

TEST(SplitList, SplitsOnCommasAndDropsEmptyItems) {
  EXPECT_EQ(SplitList("a,b,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitList("").empty());
  EXPECT_EQ(SplitInts("4,64,2844"), (std::vector<int64_t>{4, 64, 2844}));
  EXPECT_THROW(SplitInts("4,6x"), std::invalid_argument);
}

}  // namespace
}  // namespace tteps
