#include "common/gradient_noise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tteps {
namespace {

// Per-trip gradients G + noise: the estimates average to |G|^2 and tr(Sigma).
TEST(GradientNoise, EstimatesAverageToTheTrueGradientAndVariance) {
  constexpr int kDim = 40, kSmall = 8, kBig = 32, kTrials = 4000;
  const double g = 0.1, sigma = 0.5;  // |G|^2 = 0.4, tr(Sigma) = 10, B_noise = 25 trips
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, sigma);
  NoiseSum sum;
  for (int t = 0; t < kTrials; ++t) {
    std::vector<double> acc(kDim, 0.0);
    double small_sq = 0;
    for (int trip = 0; trip < kBig; ++trip) {
      for (double& a : acc) a += g + noise(rng);
      if (trip + 1 == kSmall) {
        for (double a : acc) small_sq += a * a;
      }
    }
    double big_sq = 0;
    for (double a : acc) big_sq += a * a;
    const auto e = EstimateNoise(small_sq, kSmall, big_sq, kBig);
    ASSERT_TRUE(e.has_value());
    sum.Add(*e);
  }
  const NoiseEstimate mean = sum.Mean();
  EXPECT_NEAR(mean.grad_sq, kDim * g * g, 0.05 * kDim * g * g);
  EXPECT_NEAR(mean.trace, kDim * sigma * sigma, 0.05 * kDim * sigma * sigma);
  EXPECT_NEAR(NoiseScale(mean), 25.0, 2.5);
}

TEST(GradientNoise, WithoutNoiseTheTraceIsZero) {
  // Every trip's gradient is (3, 4): |G|^2 = 25, and the sum over n trips has norm^2 25 n^2.
  const auto e = EstimateNoise(25.0 * 4 * 4, 4, 25.0 * 12 * 12, 12);
  ASSERT_TRUE(e.has_value());
  EXPECT_NEAR(e->grad_sq, 25.0, 1e-9);
  EXPECT_NEAR(e->trace, 0.0, 1e-9);
  EXPECT_NEAR(NoiseScale(*e), 0.0, 1e-9);
}

TEST(GradientNoise, NothingFromOneBatchSizeOrNonFiniteNorms) {
  EXPECT_FALSE(EstimateNoise(1.0, 8, 1.0, 8).has_value());
  EXPECT_FALSE(EstimateNoise(1.0, 0, 1.0, 8).has_value());
  EXPECT_FALSE(EstimateNoise(NAN, 4, 1.0, 8).has_value());
  EXPECT_TRUE(std::isnan(NoiseScale({0.0, 1.0})));
  EXPECT_TRUE(std::isnan(NoiseScale({-0.5, 1.0})));
  EXPECT_EQ(NoiseSum().Mean().grad_sq, 0.0);
}

// For a decision, a measured noise over an unresolved true gradient is a noise scale beyond
// every batch; with no noise measured either, it stays unknown.
TEST(GradientNoise, AnUnresolvedGradientUnderMeasuredNoiseIsAnInfiniteScale) {
  EXPECT_TRUE(std::isinf(NoiseScaleForDecision({0.0, 1.0})));
  EXPECT_TRUE(std::isinf(NoiseScaleForDecision({-0.5, 1.0})));
  EXPECT_TRUE(std::isnan(NoiseScaleForDecision({-0.5, -1.0})));
  EXPECT_TRUE(std::isnan(NoiseScaleForDecision({0.0, 0.0})));
  EXPECT_DOUBLE_EQ(NoiseScaleForDecision({2.0, 50.0}), 25.0);
}

// Equal weights: the standard error is the samples' spread over sqrt(n); a decay of every
// weight alike changes nothing; until two samples count there is none.
TEST(GradientNoise, TheStandardErrorIsTheSpreadOfTheSamplesMean) {
  NoiseSum sum;
  sum.Add({1.0, 10.0}, 3.0);
  EXPECT_TRUE(std::isnan(sum.StandardError().trace));
  sum.Add({3.0, 30.0}, 3.0);
  sum.Add({5.0, 20.0}, 3.0);
  // grad_sq 1, 3, 5: mean 3, sample variance 4, standard error sqrt(4 / 3).
  EXPECT_NEAR(sum.StandardError().grad_sq, std::sqrt(4.0 / 3), 1e-12);
  EXPECT_NEAR(sum.StandardError().trace, std::sqrt(100.0 / 3), 1e-12);
  NoiseSum decayed = sum;
  decayed.Decay(0.5);
  EXPECT_NEAR(decayed.StandardError().grad_sq, std::sqrt(4.0 / 3), 1e-12);
  // A decayed sample counts less: one old far sample and many new near ones.
  NoiseSum old_far;
  old_far.Add({100.0, 1.0}, 1.0);
  for (int i = 0; i < 60; ++i) {
    old_far.Decay(0.9);
    old_far.Add({i % 2 ? 1.0 : 3.0, 1.0}, 1.0);
  }
  EXPECT_NEAR(old_far.Mean().grad_sq, 2.0, 0.1);
  EXPECT_LT(old_far.StandardError().grad_sq, 1.0);
}

// A decision reads only what the average resolves: noisy windows whose mean trace is positive
// but within two standard errors of zero tell nothing (NaN); a resolved trace over a |G|^2
// within its errors is an unresolved gradient (infinite); both resolved give their ratio.
TEST(GradientNoise, ADecisionReadsOnlyWhatTheAverageResolves) {
  NoiseSum unresolved;  // traces -30, 1600, -10, 10, -20: mean 310, spread 720
  for (double t : {-30.0, 1600.0, -10.0, 10.0, -20.0}) unresolved.Add({1.0, t}, 2.0);
  EXPECT_GT(NoiseScaleForDecision(unresolved.Mean()), 0);  // the bare mean claims 310 trips
  EXPECT_TRUE(std::isnan(ResolvedNoiseScale(unresolved)));
  NoiseSum flat_gradient;  // traces near 50, |G|^2 around 0
  for (int i = 0; i < 8; ++i) flat_gradient.Add({i % 2 ? 0.3 : -0.2, 50.0 + i}, 1.0);
  EXPECT_TRUE(std::isinf(ResolvedNoiseScale(flat_gradient)));
  NoiseSum resolved;
  for (int i = 0; i < 8; ++i) resolved.Add({i % 2 ? 1.9 : 2.1, i % 2 ? 49.0 : 51.0}, 1.0);
  EXPECT_NEAR(ResolvedNoiseScale(resolved), 25.0, 1e-9);
  EXPECT_TRUE(std::isnan(ResolvedNoiseScale(NoiseSum())));
}

}  // namespace
}  // namespace tteps

namespace tteps {
namespace {

// Squared norms as their expectations for |G|^2 = 2 and S = 30: E|g_p|^2 = n^2 |G|^2 + n S.
TEST(EstimateNoiseFromPieces, RecoversTheTrueGradientAndVarianceFromExpectedNorms) {
  const double g2 = 2, s = 30;
  PieceNoise pieces;
  for (int64_t n : {16, 16, 32}) pieces.Add(n * n * g2 + n * s, n);
  const double total = 64.0 * 64.0 * g2 + 64 * s;
  const auto e = EstimateNoiseFromPieces(total, 64, pieces);
  ASSERT_TRUE(e.has_value());
  EXPECT_DOUBLE_EQ(e->grad_sq, g2);
  EXPECT_DOUBLE_EQ(e->trace, s);
  // One piece holding every trip has no spread to measure; nor does a step without trips.
  PieceNoise one;
  one.Add(total, 64);
  EXPECT_FALSE(EstimateNoiseFromPieces(total, 64, one).has_value());
  EXPECT_FALSE(EstimateNoiseFromPieces(0, 0, {}).has_value());
  EXPECT_FALSE(EstimateNoiseFromPieces(std::nan(""), 64, pieces).has_value());
}

}  // namespace
}  // namespace tteps
