#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/bf16.h"
#include "common/json_writer.h"
#include "common/patience.h"
#include "common/progress.h"
#include "common/run_output.h"
#include "common/split_list.h"
#include "common/trace.h"

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

TEST(JsonObject, AddMembersAppendsAnObjectsMembers) {
  EXPECT_EQ(JsonObject().Add("step", 3).AddMembers("{\"mape\":0.5,\"n\":2}").str(),
            "{\"step\":3,\"mape\":0.5,\"n\":2}");
  EXPECT_EQ(JsonObject().AddMembers("{\"a\":1}").Add("b", 2).str(), "{\"a\":1,\"b\":2}");
  EXPECT_EQ(JsonObject().Add("a", 1).AddMembers("{}").str(), "{\"a\":1}");
}

TEST(RunOutput, AppendsMetricsAndWritesSummary) {
  const std::string dir = ::testing::TempDir() + "/tteps_run_output_test/sub";
  std::filesystem::remove_all(dir);  // a finished run's directory is not written again
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

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(needle, at)) != std::string::npos; at += needle.size()) ++n;
  return n;
}

TEST(Tracer, SendsChunksOfCompleteEventsAndTheFileIsOneJsonObject) {
  const std::string path = ::testing::TempDir() + "/tteps_trace_test.json";
  std::vector<std::string> chunks;
  {
    TraceFile file(path);
    Tracer tracer(
        7, "worker 3",
        [&](std::string events) {
          chunks.push_back(events);
          file.Append(events);
        },
        /*chunk_events=*/3);
    const auto t0 = Tracer::Clock::now();
    tracer.Span("compute", t0, t0 + std::chrono::milliseconds(5));  // 2 events with the name
    EXPECT_TRUE(chunks.empty());
    tracer.NameThread(2, "comm");  // 3: a chunk goes out
    ASSERT_EQ(chunks.size(), 1u);
    { ScopedSpan span(&tracer, "push", 2); }
    { ScopedSpan nothing(nullptr, "push"); }  // no tracer: nothing recorded
    tracer.Flush();
    ASSERT_EQ(chunks.size(), 2u);
    tracer.Flush();  // nothing buffered: nothing sent
    EXPECT_EQ(chunks.size(), 2u);
    file.Close();
  }
  EXPECT_EQ(Count(chunks[0], "\"ph\":\"X\""), 1u);
  EXPECT_NE(chunks[0].find("\"dur\":5000"), std::string::npos) << chunks[0];
  EXPECT_NE(chunks[0].find("\"args\":{\"name\":\"worker 3\"}"), std::string::npos);
  EXPECT_NE(chunks[1].find("\"name\":\"push\",\"ph\":\"X\",\"pid\":7,\"tid\":2"), std::string::npos)
      << chunks[1];
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0), 0u) << text;
  EXPECT_EQ(text.substr(text.size() - 4), "\n]}\n") << text;
  EXPECT_EQ(Count(text, "\"ph\":\"X\""), 2u);
  EXPECT_EQ(Count(text, "},\n{"), 1u);  // the two chunks, comma-separated
}

TEST(SplitList, SplitsOnCommasAndDropsEmptyItems) {
  EXPECT_EQ(SplitList("a,b,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitList("").empty());
  EXPECT_EQ(SplitInts("4,64,2844"), (std::vector<int64_t>{4, 64, 2844}));
  EXPECT_THROW(SplitInts("4,6x"), std::invalid_argument);
  EXPECT_EQ(SplitDoubles("0.14,,2"), (std::vector<double>{0.14, 2}));
  EXPECT_THROW(SplitDoubles("0.1,x"), std::invalid_argument);
}

TEST(Bf16, RoundsToNearestEvenAndKeepsNanAndInfinity) {
  const float in[] = {1.0f,
                      -2.5f,
                      1.0f + 1.0f / 256,                             // a tie: to even (1.0)
                      1.0f + 3.0f / 256,                             // a tie: to even (1 + 4/256)
                      1.0f + 1.0f / 128 + 1.0f / 256 + 1.0f / 1024,  // past a tie: up
                      std::numeric_limits<float>::infinity(),
                      std::nanf(""),
                      3.0e38f};
  uint16_t packed[8];
  float out[8];
  ToBf16(in, 8, packed);
  FromBf16(packed, 8, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.5f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_EQ(out[3], 1.0f + 4.0f / 256);
  EXPECT_EQ(out[4], 1.0f + 2.0f / 128);
  EXPECT_EQ(out[5], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(out[6]));
  EXPECT_TRUE(std::isfinite(out[7]));  // rounds within range
  EXPECT_NEAR(out[7], 3.0e38f, 3.0e38f / 128);
}

TEST(Patience, StopsAfterThatManyEvaluationsWithoutALowerMape) {
  Patience p(2);
  EXPECT_FALSE(p.Offer(0.5));
  EXPECT_FALSE(p.Offer(0.6));  // one miss
  EXPECT_FALSE(p.Offer(0.4));  // a new best: the count starts again
  EXPECT_FALSE(p.Offer(0.4));  // equal is no improvement
  EXPECT_TRUE(p.Offer(std::nan("")));
  EXPECT_EQ(p.best(), 0.4);
  Patience never(0);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(never.Offer(1.0));
}

}  // namespace
}  // namespace tteps
