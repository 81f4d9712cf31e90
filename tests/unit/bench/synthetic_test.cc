// The simulated workers' prediction: exactly what a server's SGD makes of the synthetic
// gradients, and a check that sees a single key off.
#include "bench/scale/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/optimizer_kernels.h"

namespace tteps::sim {
namespace {

// A server's sync step as server/shard.cc takes it: the slices' pushes summed in slice order,
// then SGD with the mean (the optimizer kernel the servers run).
std::vector<float> ServerSteps(int64_t count, int64_t steps, int slices, double lr) {
  std::vector<float> w(count), sum(count), shape(count), grad;
  for (int64_t k = 0; k < count; ++k) w[k] = Initial(k), shape[k] = Shape(k);
  for (int64_t s = 0; s < steps; ++s) {
    std::fill(sum.begin(), sum.end(), 0.f);
    for (int slice = 0; slice < slices; ++slice) {
      FillGradient(shape, s, slice, &grad);
      for (int64_t k = 0; k < count; ++k) sum[k] += grad[k];
    }
    optimizer_kernels::Sgd(count, static_cast<float>(-lr), w.data(), sum.data(),
                           static_cast<float>(1.0 / static_cast<double>(slices)));
  }
  return w;
}

TEST(Synthetic, ThePredictionIsTheServersArithmeticToTheBit) {
  for (int slices : {1, 3, 16, 100}) {
    const std::vector<float> want = ServerSteps(1000, 40, slices, 0.0625);
    const std::vector<float> got = Expected(1000, 40, slices, 0.0625);
    EXPECT_EQ(Compare(got, want).count, 0) << slices << " slices";
  }
  // The weights move: a version's prediction is not the initial values.
  EXPECT_GT(Compare(Expected(1000, 1, 4, 0.0625), Expected(1000, 0, 4, 0.0625)).count, 0);
}

TEST(Synthetic, TheCheckNamesTheKeysThatDiffer) {
  std::vector<float> want = Expected(100, 5, 8, 0.5), got = want;
  EXPECT_EQ(Compare(got, want).count, 0);
  got[17] = std::nextafter(got[17], 1e9f);
  const Mismatch m = Compare(got, want);
  EXPECT_EQ(m.count, 1);
  EXPECT_EQ(m.keys, std::vector<int64_t>{17});
  EXPECT_GT(m.max_abs, 0);
  EXPECT_EQ(Compare(std::vector<float>(99), want).count, -1);  // another layout
}

TEST(Synthetic, ASlicesGradientIsItsCoefficientTimesTheShape) {
  std::vector<float> shape = {1, -4, 3}, grad;
  FillGradient(shape, 7, 2, &grad);
  const float c = static_cast<float>(Coefficient(7, 2));
  EXPECT_EQ(grad, (std::vector<float>{c, -4 * c, 3 * c}));
  for (int64_t s = 0; s < 50; ++s) {
    for (int slice = 0; slice < 50; ++slice) {
      EXPECT_GE(Coefficient(s, slice), -3);
      EXPECT_LE(Coefficient(s, slice), 3);
    }
  }
}

}  // namespace
}  // namespace tteps::sim
