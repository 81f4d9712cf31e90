#include "scheduler/speed_policy.h"

#include <gtest/gtest.h>

#include <numeric>

#include "scheduler/speed_meter.h"
#include "scheduler/speed_shares.h"

namespace tteps::scheduler {
namespace {

int64_t Sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

TEST(SpeedShares, ProportionalToSpeedAndSummingToTheTotal) {
  // One worker 3x slower: it gets a quarter of 8.
  EXPECT_EQ(SpeedShares({0.01, 0.03}, 8, 1, 16), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(SpeedShares({0.02, 0.02, 0.02, 0.02}, 8, 1, 16), (std::vector<int64_t>(4, 2)));
  // Speeds 1, 1, 2, 3 of a total of 14: exactly 2, 2, 4, 6.
  EXPECT_EQ(SpeedShares({3.0, 3.0, 1.5, 1.0}, 14, 1, 16), (std::vector<int64_t>{2, 2, 4, 6}));
  // Remainders go to the largest fractions, and the sum is kept.
  const auto odd = SpeedShares({1.0, 1.1, 1.3}, 10, 1, 16);
  EXPECT_EQ(Sum(odd), 10);
  EXPECT_GE(odd[0], odd[1]);
  EXPECT_GE(odd[1], odd[2]);
}

TEST(SpeedShares, BoundsHoldAndTheRestMovesToWhoCanTakeIt) {
  // 10x slower would get 0.7 of 8: raised to 1, taken from the fast one.
  EXPECT_EQ(SpeedShares({0.01, 0.1}, 8, 1, 16), (std::vector<int64_t>{7, 1}));
  // The fast worker is capped at 5; the slow one takes what is left.
  EXPECT_EQ(SpeedShares({0.01, 0.1}, 8, 1, 5), (std::vector<int64_t>{5, 3}));
  // A worker not measured (0 s) counts as infinitely slow.
  EXPECT_EQ(SpeedShares({0.0, 0.01}, 4, 1, 16), (std::vector<int64_t>{1, 3}));
  EXPECT_THROW(SpeedShares({}, 4, 1, 16), std::invalid_argument);
  EXPECT_THROW(SpeedShares({1.0}, 4, 2, 1), std::invalid_argument);
}

ppo::WindowReport Window(int worker, int64_t alpha, double seconds_per_micro_batch) {
  ppo::WindowReport r;
  r.worker = worker;
  r.step = 10;
  r.alpha = alpha;
  r.compute_s = alpha * seconds_per_micro_batch;
  return r;
}

TEST(SpeedPolicy, TheSlowerWorkerGetsTheSmallerAccumulationOnceBothAreMeasured) {
  auto policy = MakeSpeedPolicy(2, 4, 1, 16);
  policy->Observe(Window(0, 4, 0.01));
  EXPECT_FALSE(policy->Poll());  // worker 1 not measured yet
  policy->Observe(Window(1, 4, 0.03));
  auto d0 = policy->Poll(), d1 = policy->Poll();
  ASSERT_TRUE(d0 && d1);
  EXPECT_EQ(d0->worker, 0);
  EXPECT_EQ(d0->new_alpha, 6);
  EXPECT_EQ(d1->worker, 1);
  EXPECT_EQ(d1->old_alpha, 4);
  EXPECT_EQ(d1->new_alpha, 2);
  EXPECT_EQ(d1->action, "speed");
  EXPECT_FALSE(policy->Poll());
  // Windows of the old accumulation are ignored; at the new one nothing changes (balanced).
  policy->Observe(Window(1, 4, 0.03));
  policy->Observe(Window(0, 6, 0.01));
  policy->Observe(Window(1, 2, 0.03));
  EXPECT_FALSE(policy->Poll());
  // The interference ends: worker 1 is as fast again, and gets its share back.
  policy->Observe(Window(1, 2, 0.01));
  policy->Observe(Window(1, 2, 0.01));
  policy->Observe(Window(1, 2, 0.01));
  policy->Observe(Window(0, 6, 0.01));
  d0 = policy->Poll();
  d1 = policy->Poll();
  ASSERT_TRUE(d0 && d1);
  EXPECT_EQ(d0->new_alpha + d1->new_alpha, 8);
  EXPECT_LE(std::abs(d0->new_alpha - d1->new_alpha), 2);
  EXPECT_EQ(policy->Finish(), "");
}

TEST(SpeedShares, AWorkerComputingALostSliceTooTakesLessOfTheRest) {
  // Equal speeds; worker 0 also computes 4 micro-batches of a lost slice: 8 + 4 evened out in
  // time gives it 2 of the 8 and worker 1 6 (both 6 micro-batches a step).
  EXPECT_EQ(SpeedShares({0.01, 0.01}, 8, 1, 16, {4, 0}), (std::vector<int64_t>{2, 6}));
  // More extra than its share: it keeps the lower bound.
  EXPECT_EQ(SpeedShares({0.01, 0.01}, 4, 1, 16, {8, 0}), (std::vector<int64_t>{1, 3}));
  EXPECT_THROW(SpeedShares({0.01, 0.01}, 4, 1, 16, {1}), std::invalid_argument);
}

// Worker 2, 3x slower, draws 2 of the global 12 and is lost: its slice is orphaned, computed by
// worker 0 at 2 micro-batches a step, which no decision changes. The rest (10) is split over
// workers 0 and 1 with worker 0's extra micro-batches counted in its time; worker 2's slice gets
// no decision and its late windows are ignored. Once a worker joins for it, its windows count
// again and the split covers all three, the global batch still 12.
TEST(SpeedPolicy, AnOrphanedSliceKeepsItsAccumulationAndTheOthersShareTheRest) {
  auto policy = MakeSpeedPolicy(3, 4, 1, 16);
  policy->Observe(Window(0, 4, 0.01));
  policy->Observe(Window(1, 4, 0.01));
  policy->Observe(Window(2, 4, 0.03));
  std::vector<int64_t> alpha = {4, 4, 4};
  while (auto d = policy->Poll()) alpha[d->worker] = d->new_alpha;
  EXPECT_EQ(alpha, (std::vector<int64_t>{5, 5, 2}));
  policy->SetOrphaned(2, 2);
  ppo::WindowReport adopter = Window(0, 5, 0.01);
  adopter.extra = 2;
  adopter.compute_s = (5 + 2) * 0.01;
  policy->Observe(adopter);
  policy->Observe(Window(2, 2, 0.03));  // a late window of the lost worker
  policy->Observe(Window(1, 5, 0.01));
  std::vector<int> decided;
  while (auto d = policy->Poll()) {
    decided.push_back(d->worker);
    alpha[d->worker] = d->new_alpha;
  }
  EXPECT_EQ(decided, (std::vector<int>{0, 1}));
  // 4 + 2 against 6: equal time, and the global batch kept.
  EXPECT_EQ(alpha, (std::vector<int64_t>{4, 6, 2}));
  // A worker joins for slice 2 (as slow): measured first, then part of the split again.
  policy->SetOwned(2);
  policy->Observe(Window(0, 4, 0.01));
  policy->Observe(Window(1, 6, 0.01));
  EXPECT_FALSE(policy->Poll());         // slice 2's new worker not measured yet
  policy->Observe(Window(2, 2, 0.01));  // it is as fast as the others
  while (auto d = policy->Poll()) alpha[d->worker] = d->new_alpha;
  EXPECT_EQ(alpha, (std::vector<int64_t>{4, 4, 4}));
}

// A window whose first step ran before the decision and its second after: its last step
// measures the new accumulation; a window that ends at another accumulation measures nothing.
TEST(SpeedMeter, ReadsTheLastStepAtTheCurrentAccumulation) {
  SpeedMeter meter(2);
  ppo::WindowReport r = Window(0, 6, 0.1);
  r.step_alpha = {4, 6};
  r.step_compute_s = {4 * 0.3, 6 * 0.1};
  EXPECT_FALSE(meter.fresh(0));
  EXPECT_TRUE(meter.Observe(0, r, 6));
  EXPECT_NEAR(meter.seconds(0), 0.1, 1e-12);
  EXPECT_TRUE(meter.fresh(0));
  EXPECT_FALSE(meter.fresh(1));
  EXPECT_FALSE(meter.Observe(0, r, 4));
  EXPECT_NEAR(meter.seconds(0), 0.1, 1e-12);
  // Not smoothed: interference that comes (3x slower) is read from one window.
  r.step_compute_s = {6 * 0.1, 6 * 0.3};
  EXPECT_TRUE(meter.Observe(0, r, 6));
  EXPECT_NEAR(meter.seconds(0), 0.3, 1e-12);
  // Without per-step times the window counts as a whole, at its own accumulation only.
  EXPECT_TRUE(meter.Observe(1, Window(1, 4, 0.2), 4));
  EXPECT_NEAR(meter.seconds(1), 0.2, 1e-12);
  EXPECT_FALSE(meter.Observe(1, Window(1, 4, 0.2), 2));
  // Micro-batches of an adopted slice count in the time.
  ppo::WindowReport adopter = Window(1, 4, 0.2);
  adopter.extra = 4;
  adopter.compute_s = 8 * 0.25;
  EXPECT_TRUE(meter.Observe(1, adopter, 4));
  EXPECT_NEAR(meter.seconds(1), 0.25, 1e-12);
  meter.NewRound();
  EXPECT_FALSE(meter.fresh(0));
  EXPECT_FALSE(meter.fresh(1));
  EXPECT_NEAR(meter.seconds(1), 0.25, 1e-12);
  meter.Forget(1);
  EXPECT_EQ(meter.seconds(1), 0.0);
}

// Come-and-go interference: the split follows each phase one round after it shows, and the
// windows straddling a decision measure the new accumulation from their later step.
TEST(SpeedPolicy, FollowsInterferenceThatComesAndGoesWithinARound) {
  auto policy = MakeSpeedPolicy(2, 4, 1, 16);
  std::vector<int64_t> alpha = {4, 4};
  const auto round = [&](double slow_seconds) {
    for (int w : {0, 1}) {
      ppo::WindowReport r = Window(w, alpha[w], w == 1 ? slow_seconds : 0.01);
      r.step_alpha = {alpha[w], alpha[w]};
      r.step_compute_s = {r.compute_s, r.compute_s};
      policy->Observe(r);
    }
    while (auto d = policy->Poll()) alpha[d->worker] = d->new_alpha;
  };
  round(0.03);
  EXPECT_EQ(alpha, (std::vector<int64_t>{6, 2}));
  round(0.01);  // the interference is gone
  EXPECT_EQ(alpha, (std::vector<int64_t>{4, 4}));
  round(0.03);  // and back
  EXPECT_EQ(alpha, (std::vector<int64_t>{6, 2}));
  round(0.03);  // balanced: no decision
  EXPECT_EQ(alpha, (std::vector<int64_t>{6, 2}));
}

TEST(SpeedPolicy, AStartOutsideTheBoundsIsRefused) {
  EXPECT_THROW(MakeSpeedPolicy(2, 20, 1, 16), std::invalid_argument);
}

}  // namespace
}  // namespace tteps::scheduler
