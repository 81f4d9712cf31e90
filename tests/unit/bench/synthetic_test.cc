// The simulated workers' prediction: exactly what a server's SGD makes of the synthetic
// gradients, and a check that sees a single key off.
#include "bench/sim/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/optimizer_kernels.h"

namespace tteps::sim {
namespace {

// A server's sync step as server/shard.cc takes it: the slices' pushes (on `spans` only)
// summed in slice order, then SGD with the mean (the optimizer kernel the servers run).
std::vector<float> ServerSteps(int64_t count, int64_t steps, int slices, double lr,
                               const std::vector<KeyRange>& spans = {}) {
  const std::vector<Gradient> grads = GradientsByCoefficient(count);
  std::vector<float> w(count), sum(count);
  for (int64_t k = 0; k < count; ++k) w[k] = Initial(k);
  for (int64_t s = 0; s < steps; ++s) {
    std::fill(sum.begin(), sum.end(), 0.f);
    for (int slice = 0; slice < slices; ++slice) {
      const std::vector<float>& g = *grads[Coefficient(s, slice) + 3];
      for (const KeyRange& r : spans.empty() ? std::vector<KeyRange>{{0, count}} : spans) {
        for (int64_t k = r.begin; k < r.end; ++k) sum[k] += g[k];
      }
    }
    optimizer_kernels::Sgd(count, static_cast<float>(-lr), w.data(), sum.data(),
                           static_cast<float>(1.0 / static_cast<double>(slices)));
  }
  return w;
}

TEST(Synthetic, ThePredictionIsTheServersArithmeticToTheBit) {
  for (int slices : {1, 3, 16, 100}) {
    const std::vector<float> want = ServerSteps(1000, 40, slices, 0.0625);
    EXPECT_EQ(Compare(Expected(1000, 40, slices, 0.0625).data(), want).count, 0) << slices;
  }
  // The weights move: a version's prediction is not the initial values.
  EXPECT_GT(Compare(Expected(1000, 1, 4, 0.0625).data(), Expected(1000, 0, 4, 0.0625)).count, 0);
}

TEST(Synthetic, PushesOfSomeKeysLeaveTheOthersAtTheirInitialValues) {
  const std::vector<KeyRange> ranges = {{0, 400}, {400, 1000}, {0, 400}};  // with a replica
  const std::vector<KeyRange> spans = PushedKeys(ranges, 0.1);
  EXPECT_EQ(spans, (std::vector<KeyRange>{{0, 40}, {400, 460}}));
  EXPECT_TRUE(PushedKeys(ranges, 1).empty());
  EXPECT_EQ(PushedKeys({{0, 3}}, 0.01), (std::vector<KeyRange>{{0, 1}}));  // a key at least
  const std::vector<float> want = ServerSteps(1000, 30, 16, 0.25, spans);
  const std::vector<float> got = Expected(1000, 30, 16, 0.25, spans);
  EXPECT_EQ(Compare(got.data(), want).count, 0);
  EXPECT_EQ(got[500], Initial(500));
  EXPECT_NE(got[21], Initial(21));  // Shape(21) != 0
}

TEST(Synthetic, TheCheckNamesTheKeysThatDiffer) {
  std::vector<float> want = Expected(100, 5, 8, 0.5), got = want;
  EXPECT_EQ(Compare(got.data(), want).count, 0);
  got[17] = std::nextafter(got[17], 1e9f);
  const Mismatch m = Compare(got.data(), want);
  EXPECT_EQ(m.count, 1);
  EXPECT_EQ(m.keys, std::vector<int64_t>{17});
  EXPECT_GT(m.max_abs, 0);
  EXPECT_EQ(Compare(got.data(), want, {{0, 10}, {20, 30}}).count, 0);  // outside the keys asked
}

// Async: two servers applying their pushes (each Shape, SGD at 1/16) one at a time, as many
// as each received, on their spans; the weights say how many each applied, run by run, and a
// push applied halfway (a key a push left out) or a key off by one ulp is unexplained.
TEST(Synthetic, AsyncWeightsSayHowManyPushesEachServerApplied) {
  const int64_t count = 1000;
  const std::vector<KeyRange> spans = PushedKeys({{0, 400}, {400, 1000}}, 0.1);
  const std::vector<Gradient> grads = GradientsByCoefficient(count);
  std::vector<float> w(count);
  for (int64_t k = 0; k < count; ++k) w[k] = Initial(k);
  const int64_t pushes[] = {37, 41};
  for (int s = 0; s < 2; ++s) {
    for (int64_t p = 0; p < pushes[s]; ++p) {
      const KeyRange& r = spans[s];
      optimizer_kernels::Sgd(r.size(), -0.0625f, w.data() + r.begin, grads[1 + 3]->data() + r.begin,
                             1.0f);
    }
  }
  PushRuns read = ReadPushes(w, 0.0625);
  EXPECT_EQ(read.unexplained, 0);
  ASSERT_EQ(read.runs.size(), 4u);
  EXPECT_EQ(read.runs[0].begin, 0);
  EXPECT_EQ(read.runs[0].end, 40);
  EXPECT_EQ(read.runs[0].n, 37);
  EXPECT_EQ(read.runs[1].n, 0);
  EXPECT_EQ(read.runs[2].begin, 400);
  EXPECT_EQ(read.runs[2].end, 460);
  EXPECT_EQ(read.runs[2].n, 41);
  EXPECT_EQ(read.runs[3].end, count);
  w[401] = std::nextafter(w[401], 1e9f);
  read = ReadPushes(w, 0.0625);
  EXPECT_EQ(read.unexplained, 1);
  EXPECT_EQ(read.first_unexplained, 401);
}

TEST(Synthetic, ASlicesGradientIsItsCoefficientTimesTheShape) {
  const std::vector<Gradient> g = GradientsByCoefficient(3);
  ASSERT_EQ(g.size(), 7u);
  for (int c = -3; c <= 3; ++c) {
    for (int64_t k = 0; k < 3; ++k) EXPECT_EQ((*g[c + 3])[k], static_cast<float>(c) * Shape(k));
  }
  for (int64_t s = 0; s < 50; ++s) {
    for (int slice = 0; slice < 50; ++slice) {
      EXPECT_GE(Coefficient(s, slice), -3);
      EXPECT_LE(Coefficient(s, slice), 3);
    }
  }
}

}  // namespace
}  // namespace tteps::sim
