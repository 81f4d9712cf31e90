// AdaScale's gain (common/adascale.h): its limits, the square root for Adam, and the steps
// before any noise is measured.
#include "common/adascale.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tteps {
namespace {

// Pieces whose norms are the expectations for |G|^2 = g2 and S = s, in `count` pieces of n.
PieceNoise Pieces(double g2, double s, int64_t n, int count, double* total) {
  PieceNoise p;
  for (int i = 0; i < count; ++i) p.Add(n * n * g2 + n * s, n);
  const double big = static_cast<double>(n * count);
  *total = big * big * g2 + big * s;
  return p;
}

TEST(AdaScaleGain, LiesBetweenOneAndTheScale) {
  // B = S / |G|^2 = 64 = M0, at 4 x the base batch: (1 + 1) / (64/256 + 1) = 1.6.
  EXPECT_DOUBLE_EQ(AdaScaleGain({1.0, 64.0}, true, 256, 64), 1.6);
  // No noise: a larger batch is worth one step; all noise: the scale.
  EXPECT_DOUBLE_EQ(AdaScaleGain({1.0, 0.0}, true, 256, 64), 1.0);
  EXPECT_DOUBLE_EQ(AdaScaleGain({0.0, 5.0}, true, 256, 64), 4.0);
  EXPECT_DOUBLE_EQ(AdaScaleGain({-1.0, 5.0}, true, 256, 64), 4.0);
  // Smaller than the base: below 1, down to the scale.
  EXPECT_DOUBLE_EQ(AdaScaleGain({0.0, 5.0}, true, 32, 64), 0.5);
  EXPECT_DOUBLE_EQ(AdaScaleGain({1.0, 64.0}, true, 64, 64), 1.0);
  // Nothing measured yet.
  EXPECT_DOUBLE_EQ(AdaScaleGain({}, false, 256, 64), 1.0);
}

TEST(AdaScale, GainsOnceTwoPiecesHaveTripsAndAdamTakesTheSquareRoot) {
  double total = 0;
  const PieceNoise four = Pieces(1.0, 64.0, 64, 4, &total);
  AdaScale sgd(64, 1.0), adam(64, 0.5);
  // A step of one piece measures nothing: gain 1.
  PieceNoise one;
  one.Add(total, 256);
  EXPECT_DOUBLE_EQ(sgd.Step(total, 256, one), 1.0);
  EXPECT_NEAR(sgd.Step(total, 256, four), 1.6, 1e-12);
  EXPECT_NEAR(sgd.last_gain(), 1.6, 1e-12);
  EXPECT_NEAR(adam.Step(total, 256, four), std::sqrt(1.6), 1e-12);
  // A checkpoint's state continues with the same gains.
  AdaScale resumed(64, 1.0);
  resumed.Restore(sgd.state());
  double total2 = 0;
  const PieceNoise noisier = Pieces(1.0, 640.0, 64, 4, &total2);
  EXPECT_DOUBLE_EQ(resumed.Step(total2, 256, noisier), sgd.Step(total2, 256, noisier));
  EXPECT_GT(sgd.last_gain(), 1.6);  // noisier: closer to the scale
}

TEST(MakeAdaScale, FollowsTheConfiguration) {
  OptimizerConfig c;
  EXPECT_EQ(MakeAdaScale(c, 64), nullptr);
  c.lr_scaling = "adascale";
  c.name = "sgd";
  double total = 0;
  const PieceNoise p = Pieces(0.0, 10.0, 32, 2, &total);  // all noise: the scale, 64 / 32
  EXPECT_DOUBLE_EQ(MakeAdaScale(c, 32)->Step(total, 64, p), 2.0);
  c.lr_scaling_base = 16;  // the base batch given: 64 / 16
  EXPECT_DOUBLE_EQ(MakeAdaScale(c, 32)->Step(total, 64, p), 4.0);
  c.lr_scaling = "linear";
  EXPECT_THROW(MakeAdaScale(c, 32), std::invalid_argument);
}

}  // namespace
}  // namespace tteps
