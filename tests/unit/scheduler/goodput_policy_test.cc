#include "scheduler/goodput_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace tteps::scheduler {
namespace {

constexpr StepModel kScaled = StepModel::kScaledLr;
constexpr StepModel kAdam = StepModel::kFixedAdamStep;

int64_t Sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

GoodputModel Model(double noise_scale) {
  GoodputModel m;
  m.seconds = {0.01, 0.01};
  m.trips = {16, 16};
  m.overhead_s = 0.05;  // an exchange that costs five micro-batches
  m.noise_scale = noise_scale;
  m.base_batch = 2 * 2 * 16;
  return m;
}

TEST(Goodput, EfficiencyIsOneAtTheBaseBatchAndFallsAboveTheNoiseScale) {
  EXPECT_DOUBLE_EQ(StatisticalEfficiency(kScaled, 100, 64, 64), 1.0);
  EXPECT_NEAR(StatisticalEfficiency(kScaled, 100, 64, 1000), 164.0 / 1100.0, 1e-12);
  EXPECT_GT(StatisticalEfficiency(kScaled, 1e6, 64, 1000), 0.99);  // noise dominates: batch is free
  EXPECT_DOUBLE_EQ(StatisticalEfficiency(kScaled, -5, 64, 128), 0.5);  // too quiet to measure: as 0
  EXPECT_DOUBLE_EQ(StatisticalEfficiency(kScaled, std::nan(""), 64, 128), 1.0);
}

// Adam at a fixed rate: a step's length does not grow with the batch, so a trip in a larger
// batch is worth less even where the noise is beyond the batch (by sqrt(M0 / M) in the limit).
TEST(Goodput, WithAFixedAdamStepALargerBatchCostsEvenBelowTheNoiseScale) {
  EXPECT_DOUBLE_EQ(StatisticalEfficiency(kAdam, 100, 64, 64), 1.0);
  EXPECT_NEAR(StatisticalEfficiency(kAdam, 100, 64, 1000),
              std::sqrt(64.0 * 164.0 / (1000.0 * 1100.0)), 1e-12);
  EXPECT_NEAR(StatisticalEfficiency(kAdam, 1e9, 64, 256), 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(StatisticalEfficiency(kAdam, INFINITY, 64, 256), 0.5);
  EXPECT_DOUBLE_EQ(StatisticalEfficiency(kAdam, -5, 64, 128), 0.5);  // as 0: as the scaled rate
  EXPECT_DOUBLE_EQ(StatisticalEfficiency(kAdam, std::nan(""), 64, 128), 1.0);
  // A step's progress against a noise-free step's.
  EXPECT_NEAR(StepProgress(kScaled, 300, 100), 0.25, 1e-12);
  EXPECT_NEAR(StepProgress(kAdam, 300, 100), 0.5, 1e-12);
  EXPECT_EQ(StepProgress(kAdam, INFINITY, 100), 0.0);
  // So the batch of the highest throughput no longer wins where the gradient is unresolved:
  // goodput ~ sqrt(T) / (T x 0.01 / 2 + 0.05) over T micro-batches a step peaks where the
  // compute equals the exchange's 0.05 s, at 5 a worker, not at the largest batch (8).
  GoodputModel m = Model(INFINITY);
  m.step_model = kAdam;
  EXPECT_EQ(BestSplit(m, 2, 8), (std::vector<int64_t>{5, 5}));
}

TEST(Goodput, ANoisyGradientBuysTheLargestBatchAQuietOneTheSmallest) {
  // A large noise scale: statistical efficiency stays near 1, so the largest batch (which
  // amortises the exchange) wins.
  EXPECT_EQ(BestSplit(Model(1e6), 2, 8), (std::vector<int64_t>{8, 8}));
  // No noise at all: every extra trip is wasted, the smallest batch wins.
  EXPECT_EQ(BestSplit(Model(0), 2, 8), (std::vector<int64_t>{2, 2}));
  // In between, something in between.
  const auto mid = BestSplit(Model(300), 2, 8);
  EXPECT_GT(Sum(mid), 4);
  EXPECT_LT(Sum(mid), 16);
}

TEST(Goodput, TheSplitFollowsSpeed) {
  GoodputModel m = Model(1e6);
  m.seconds = {0.01, 0.03};
  const auto split = BestSplit(m, 2, 8);
  EXPECT_GT(split[0], split[1]);
}

ppo::WindowReport Window(int worker, int64_t alpha, double noise_scale) {
  ppo::WindowReport r;
  r.worker = worker;
  r.step = 10;
  r.alpha = alpha;
  r.losses.assign(4, 1.0);
  r.trips = 4 * alpha * 16;
  r.compute_s = alpha * 0.01;
  r.step_s = r.compute_s + 0.05;
  r.noise_steps = 8;
  r.noise = {1.0, noise_scale};
  return r;
}

TEST(GoodputPolicy, RaisesTheBatchOnceTheNoiseIsMeasured) {
  auto policy = MakeGoodputPolicy(2, 2, 2, 8, kScaled);
  policy->Observe(Window(0, 2, 1e6));
  EXPECT_FALSE(policy->Poll());  // worker 1 not measured yet
  policy->Observe(Window(1, 2, 1e6));
  auto d0 = policy->Poll(), d1 = policy->Poll();
  ASSERT_TRUE(d0 && d1);
  EXPECT_EQ(d0->action, "goodput");
  EXPECT_EQ(d0->new_alpha, 8);
  EXPECT_EQ(d1->new_alpha, 8);
  EXPECT_FALSE(policy->Poll());
  // Windows still at the old accumulation change nothing.
  policy->Observe(Window(0, 2, 1e6));
  EXPECT_FALSE(policy->Poll());
}

// The true gradient below what the averaged estimates resolve, under measured noise (Adam's
// preconditioned gradient on the shipped sample): every batch is worth its size, so the batch
// of the highest throughput, the largest, wins.
TEST(GoodputPolicy, AnUnresolvedGradientBuysTheBatchOfTheHighestThroughput) {
  EXPECT_DOUBLE_EQ(StatisticalEfficiency(kScaled, INFINITY, 64, 1000), 1.0);
  EXPECT_EQ(BestSplit(Model(INFINITY), 2, 8), (std::vector<int64_t>{8, 8}));
  auto policy = MakeGoodputPolicy(2, 2, 2, 8, kScaled);
  auto quiet = [](int worker) {
    ppo::WindowReport r = Window(worker, 2, 30.0);
    r.noise.grad_sq = -0.1;  // trace 30, |G|^2 not resolved
    return r;
  };
  policy->Observe(quiet(0));
  policy->Observe(quiet(1));
  auto d0 = policy->Poll(), d1 = policy->Poll();
  ASSERT_TRUE(d0 && d1);
  EXPECT_EQ(d0->new_alpha, 8);
  EXPECT_EQ(d1->new_alpha, 8);
}

TEST(GoodputPolicy, KeepsTheBatchWhereTheGradientIsQuiet) {
  auto policy = MakeGoodputPolicy(2, 2, 2, 8, kScaled);
  for (int i = 0; i < 3; ++i) {
    policy->Observe(Window(0, 2, 0.0));
    policy->Observe(Window(1, 2, 0.0));
  }
  EXPECT_FALSE(policy->Poll());
}

// After a loss: the orphaned slice's accumulation stays (and its trips count in the batch),
// decisions go to the other slices only, and its worker's late windows are ignored.
TEST(GoodputPolicy, AnOrphanedSliceGetsNoDecisionAndCountsInTheBatch) {
  auto policy = MakeGoodputPolicy(3, 2, 2, 8, kScaled);
  policy->SetOrphaned(2, 2);
  ppo::WindowReport adopter = Window(0, 2, 1e6);
  adopter.extra = 2;
  adopter.compute_s *= 2;  // its own 2 micro-batches and the lost slice's 2
  adopter.trips *= 2;
  policy->Observe(adopter);
  policy->Observe(Window(2, 2, 1e6));
  EXPECT_FALSE(policy->Poll());  // worker 1 not measured yet
  policy->Observe(Window(1, 2, 1e6));
  std::vector<int> decided;
  while (auto d = policy->Poll()) {
    decided.push_back(d->worker);
    EXPECT_GT(d->new_alpha, 2);  // a noisy gradient: a larger batch
  }
  EXPECT_EQ(decided, (std::vector<int>{0, 1}));
}

TEST(Goodput, FixedTripsCountInTheBatchAndExtraMicroBatchesInTheTime) {
  GoodputModel m = Model(1e6);
  const double plain = Goodput(m, {2, 2});
  m.fixed_trips = 2 * 16;  // a third slice's, computed by worker 0
  m.extra = {2, 0};
  // 1.5x the batch in 2x the slowest compute (plus the same overhead).
  EXPECT_GT(Goodput(m, {2, 2}), plain);
  EXPECT_LT(Goodput(m, {2, 2}), 1.5 * plain);
}

TEST(GoodputPolicy, RefusesAccumulationsThatCannotMeasureTheNoise) {
  EXPECT_THROW(MakeGoodputPolicy(2, 2, 1, 8, kScaled), std::invalid_argument);
  EXPECT_THROW(MakeGoodputPolicy(2, 9, 2, 8, kScaled), std::invalid_argument);
}

}  // namespace
}  // namespace tteps::scheduler
