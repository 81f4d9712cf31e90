// The shard's consistency models: sync aggregation, async staleness, SSP gating, pull readiness,
// blockers and copy-on-write values. Values are small dyadic rationals so that the SGD steps
// (lr 0.5) are exact in float and can be compared with ==.
#include "server/shard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "server/optimizer.h"

namespace tteps::server {
namespace {

constexpr double kLr = 0.5;
constexpr int64_t kN = 37;

std::unique_ptr<Optimizer> Sgd(size_t n) {
  OptimizerConfig c;
  c.name = "sgd";
  c.lr = kLr;
  return MakeOptimizer(c, n);
}

std::unique_ptr<Shard> MakeShard(Consistency mode, int workers, int64_t staleness = 0,
                                 KeyRange range = {100, 100 + kN}) {
  return std::make_unique<Shard>(range, mode, workers, staleness, Sgd(range.size()));
}

std::vector<float> Init() {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(i % 9 - 4) * 0.5f;
  return v;
}

std::vector<float> Grad(int seed) {
  std::vector<float> g(kN);
  for (int64_t i = 0; i < kN; ++i) g[i] = static_cast<float>((i * (seed + 2) + seed) % 7 - 3);
  return g;
}

// values - lr * sum / samples, computed in double (exact for these inputs).
std::vector<float> Stepped(const std::vector<float>& values, const std::vector<float>& sum,
                           int64_t samples) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = static_cast<float>(values[i] - kLr * (static_cast<double>(sum[i]) / samples));
  }
  return out;
}

std::vector<float> Add(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

TEST(ConsistencyFor, KnowsTheThreeModes) {
  EXPECT_EQ(ConsistencyFor(ParseMode("sync")), Consistency::kSync);
  EXPECT_EQ(ConsistencyFor(ParseMode("async")), Consistency::kAsync);
  EXPECT_EQ(ConsistencyFor(ParseMode("ssp")), Consistency::kSsp);
  EXPECT_THROW(ParseMode("SSP"), std::invalid_argument);
  EXPECT_THROW(ConsistencyFor(Mode::kRing), std::invalid_argument);
  EXPECT_THROW(ParseMode(""), std::invalid_argument);
}

TEST(Shard, RejectsBadConstruction) {
  EXPECT_THROW(Shard({0, 10}, Consistency::kSync, 0, 0, Sgd(10)), std::invalid_argument);
  EXPECT_THROW(Shard({0, 10}, Consistency::kSync, 2, 0, Sgd(9)), std::invalid_argument);
}

TEST(Shard, InitSetsValuesAndPushBeforeInitIsRefused) {
  auto shard = MakeShard(Consistency::kSync, 2);
  EXPECT_FALSE(shard->initialized());
  const auto g = Grad(0);
  EXPECT_THROW(shard->Push(0, 0, 1, g.data()), std::invalid_argument);
  const auto init = Init();
  shard->Init(init.data());
  EXPECT_TRUE(shard->initialized());
  EXPECT_EQ(*shard->values(), init);
  EXPECT_EQ(shard->version(), 0);
  EXPECT_EQ(shard->range(), (KeyRange{100, 100 + kN}));
}

TEST(Shard, RejectsPushesFromUnknownWorkersOrWithNegativeSamples) {
  for (Consistency mode : {Consistency::kSync, Consistency::kAsync, Consistency::kSsp}) {
    auto shard = MakeShard(mode, 2, 1);
    const auto init = Init(), g = Grad(0);
    shard->Init(init.data());
    EXPECT_THROW(shard->Push(-1, 0, 1, g.data()), std::invalid_argument);
    EXPECT_THROW(shard->Push(2, 0, 1, g.data()), std::invalid_argument);
    EXPECT_THROW(shard->Push(0, 0, -1, g.data()), std::invalid_argument);
    EXPECT_EQ(*shard->values(), init);
    EXPECT_EQ(shard->version(), 0);
    EXPECT_EQ(shard->clock(0), 0);
  }
}

TEST(ShardSync, AggregatesUnequalSampleCountsIntoOneStep) {
  auto shard = MakeShard(Consistency::kSync, 3);
  const auto init = Init(), g0 = Grad(0), g1 = Grad(1), g2 = Grad(2);
  shard->Init(init.data());
  // n = 1 + 3 + 4 = 8: the step uses (g0 + g1 + g2) / 8, not the mean of the per-worker means.
  EXPECT_EQ(shard->Push(0, 0, 1, g0.data()), 0);
  EXPECT_EQ(shard->version(), 0);
  EXPECT_EQ(*shard->values(), init);
  EXPECT_EQ(shard->Push(2, 0, 4, g2.data()), 0);
  EXPECT_EQ(shard->version(), 0);
  EXPECT_EQ(*shard->values(), init);
  EXPECT_EQ(shard->Push(1, 0, 3, g1.data()), 0);
  EXPECT_EQ(shard->version(), 1);
  const auto v1 = Stepped(init, Add(Add(g0, g1), g2), 8);
  EXPECT_EQ(*shard->values(), v1);
  EXPECT_EQ(shard->optimizer().steps(), 1);
  for (int w = 0; w < 3; ++w) EXPECT_EQ(shard->clock(w), 1);

  // The aggregate starts afresh for version 1.
  shard->Push(1, 1, 2, g0.data());
  shard->Push(0, 1, 1, g1.data());
  EXPECT_EQ(shard->version(), 1);
  shard->Push(2, 1, 1, g2.data());
  EXPECT_EQ(shard->version(), 2);
  EXPECT_EQ(*shard->values(), Stepped(v1, Add(Add(g0, g1), g2), 4));
  EXPECT_EQ(shard->optimizer().steps(), 2);
}

TEST(ShardSync, SecondPushOfAWorkerIsRefusedAndNotCounted) {
  auto shard = MakeShard(Consistency::kSync, 2);
  const auto init = Init(), g0 = Grad(0), g1 = Grad(1);
  shard->Init(init.data());
  shard->Push(0, 0, 2, g0.data());
  EXPECT_THROW(shard->Push(0, 0, 2, g0.data()), std::invalid_argument);
  EXPECT_EQ(shard->clock(0), 1);
  EXPECT_EQ(shard->version(), 0);
  shard->Push(1, 0, 2, g1.data());
  EXPECT_EQ(shard->version(), 1);
  EXPECT_EQ(*shard->values(), Stepped(init, Add(g0, g1), 4));  // g0 summed once
}

TEST(ShardSync, PushForAnotherVersionIsRefused) {
  auto shard = MakeShard(Consistency::kSync, 2);
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  EXPECT_THROW(shard->Push(0, 1, 1, g.data()), std::invalid_argument);  // future
  shard->Push(0, 0, 1, g.data());
  shard->Push(1, 0, 1, g.data());
  ASSERT_EQ(shard->version(), 1);
  const auto v1 = *shard->values();
  EXPECT_THROW(shard->Push(0, 0, 1, g.data()), std::invalid_argument);  // old
  EXPECT_THROW(shard->Push(1, 2, 1, g.data()), std::invalid_argument);  // future
  EXPECT_EQ(shard->version(), 1);
  EXPECT_EQ(*shard->values(), v1);
  EXPECT_EQ(shard->clock(0), 1);
  EXPECT_EQ(shard->clock(1), 1);
}

TEST(ShardSync, ZeroSamplePushesCountAndTheVersionAdvances) {
  auto shard = MakeShard(Consistency::kSync, 2);
  const auto init = Init(), g0 = Grad(0), zero = std::vector<float>(kN, 0.0f);
  shard->Init(init.data());
  // One worker's slice of a small last batch is empty.
  shard->Push(0, 0, 4, g0.data());
  shard->Push(1, 0, 0, zero.data());
  EXPECT_EQ(shard->version(), 1);
  EXPECT_EQ(*shard->values(), Stepped(init, g0, 4));
  // Nobody has samples: no step, but the version still advances.
  const auto v1 = *shard->values();
  shard->Push(0, 1, 0, zero.data());
  EXPECT_EQ(shard->version(), 1);
  shard->Push(1, 1, 0, zero.data());
  EXPECT_EQ(shard->version(), 2);
  EXPECT_EQ(*shard->values(), v1);
  EXPECT_EQ(shard->optimizer().steps(), 1);
}

TEST(ShardSync, PullReadyOnceTheVersionIsReached) {
  auto shard = MakeShard(Consistency::kSync, 2);
  EXPECT_FALSE(shard->PullReady(0, 0));  // before init nothing is served
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  EXPECT_TRUE(shard->PullReady(0, 0));
  EXPECT_FALSE(shard->PullReady(0, 1));
  shard->Push(0, 0, 1, g.data());
  EXPECT_FALSE(shard->PullReady(0, 1));
  EXPECT_FALSE(shard->PullReady(1, 1));
  shard->Push(1, 0, 1, g.data());
  EXPECT_TRUE(shard->PullReady(0, 1));
  EXPECT_TRUE(shard->PullReady(1, 1));
  EXPECT_TRUE(shard->PullReady(1, 0));  // older versions: the current one is served
  EXPECT_FALSE(shard->PullReady(0, 2));
}

TEST(ShardSync, BlockersAreTheWorkersThatHaveNotPushed) {
  auto shard = MakeShard(Consistency::kSync, 3);
  EXPECT_EQ(shard->Blockers(0, 1), std::vector<int>{});  // before init: nobody's push helps
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  EXPECT_EQ(shard->Blockers(0, 0), std::vector<int>{});  // ready
  EXPECT_EQ(shard->Blockers(0, 1), (std::vector<int>{0, 1, 2}));
  shard->Push(1, 0, 1, g.data());
  EXPECT_EQ(shard->Blockers(1, 1), (std::vector<int>{0, 2}));
  shard->Push(0, 0, 1, g.data());
  EXPECT_EQ(shard->Blockers(0, 1), (std::vector<int>{2}));
  shard->Push(2, 0, 1, g.data());
  EXPECT_EQ(shard->Blockers(0, 1), std::vector<int>{});
  EXPECT_EQ(shard->Blockers(0, 2), (std::vector<int>{0, 1, 2}));
}

TEST(Shard, ScheduleStepIsTheVersionInSyncAndPushesPerWorkerOtherwise) {
  for (Consistency mode : {Consistency::kSync, Consistency::kAsync}) {
    auto shard = MakeShard(mode, 2);
    std::vector<int64_t> steps;
    shard->set_lr_schedule([&](int64_t step) {
      steps.push_back(step);
      return kLr;
    });
    const auto init = Init(), g = Grad(0);
    shard->Init(init.data());
    if (mode == Consistency::kSync) {
      for (int64_t v = 0; v < 3; ++v) {
        shard->Push(0, v, 1, g.data());
        shard->Push(1, v, 0, g.data());  // an empty slice still completes the step
      }
      EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2}));
    } else {
      // Worker 0's pushes are empty (no update), worker 1's update: the pushes received, not
      // the updates applied, say how far the job is.
      shard->Push(0, 0, 0, g.data());
      shard->Push(1, 0, 1, g.data());  // 1 push before it: step 0
      shard->Push(0, 1, 0, g.data());
      shard->Push(1, 1, 1, g.data());  // 3 before it: step 1
      EXPECT_EQ(steps, (std::vector<int64_t>{0, 1}));
    }
  }
}

TEST(ShardAsync, AppliesEachPushAtOnceAndReportsStaleness) {
  auto shard = MakeShard(Consistency::kAsync, 2);
  const auto init = Init(), g0 = Grad(0), g1 = Grad(1);
  shard->Init(init.data());
  EXPECT_EQ(shard->Push(0, 0, 2, g0.data()), 0);
  EXPECT_EQ(shard->version(), 1);
  const auto v1 = Stepped(init, g0, 2);
  EXPECT_EQ(*shard->values(), v1);
  EXPECT_EQ(shard->Push(1, 0, 4, g1.data()), 1);  // computed on version 0, arrives at 1
  EXPECT_EQ(shard->version(), 2);
  const auto v2 = Stepped(v1, g1, 4);
  EXPECT_EQ(*shard->values(), v2);
  EXPECT_EQ(shard->Push(1, 0, 1, g0.data()), 2);
  EXPECT_EQ(shard->Push(0, 3, 1, g1.data()), 0);
  EXPECT_EQ(shard->version(), 4);
  EXPECT_EQ(shard->clock(0), 2);
  EXPECT_EQ(shard->clock(1), 2);
  // A push computed on a version the shard has not made yet is refused.
  EXPECT_THROW(shard->Push(0, 5, 1, g0.data()), std::invalid_argument);
  EXPECT_EQ(shard->version(), 4);
  EXPECT_EQ(shard->clock(0), 2);
}

TEST(ShardAsync, ZeroSamplePushChangesNoValues) {
  auto shard = MakeShard(Consistency::kAsync, 2);
  const auto init = Init(), g0 = Grad(0);
  shard->Init(init.data());
  EXPECT_EQ(shard->Push(0, 0, 0, g0.data()), 0);
  EXPECT_EQ(*shard->values(), init);
  EXPECT_EQ(shard->version(), 0);  // nothing applied: no new version
  EXPECT_EQ(shard->clock(0), 1);   // but the push counts for the worker's clock
  EXPECT_EQ(shard->optimizer().steps(), 0);
}

TEST(ShardAsync, PullAlwaysReadyAfterInitNeverBefore) {
  auto shard = MakeShard(Consistency::kAsync, 2);
  for (int64_t want : {0, 1, 100}) EXPECT_FALSE(shard->PullReady(0, want));
  const auto init = Init();
  shard->Init(init.data());
  for (int64_t want : {0, 1, 100}) {
    EXPECT_TRUE(shard->PullReady(0, want));
    EXPECT_TRUE(shard->PullReady(1, want));
    EXPECT_EQ(shard->Blockers(1, want), std::vector<int>{});
  }
}

TEST(ShardSsp, PullsAreGatedByTheSlowestWorkersClock) {
  // Staleness 1, three workers: a worker at clock c may pull once min clock >= c - 1.
  auto shard = MakeShard(Consistency::kSsp, 3, /*staleness=*/1);
  EXPECT_FALSE(shard->PullReady(0, 0));
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  EXPECT_TRUE(shard->PullReady(0, 0));
  EXPECT_TRUE(shard->PullReady(0, 1));
  EXPECT_FALSE(shard->PullReady(0, 2));

  EXPECT_EQ(shard->Push(0, 0, 1, g.data()), 0);  // clocks 1 0 0
  EXPECT_TRUE(shard->PullReady(0, 1));
  EXPECT_EQ(shard->Push(0, 1, 1, g.data()), 0);  // clocks 2 0 0
  EXPECT_FALSE(shard->PullReady(0, 2));          // min 0 < 2 - 1
  EXPECT_EQ(shard->Blockers(0, 2), (std::vector<int>{1, 2}));
  EXPECT_TRUE(shard->PullReady(1, 0));  // the slow workers may go on

  EXPECT_EQ(shard->Push(1, 0, 1, g.data()), 2);  // clocks 2 1 0; computed on 0, arrives at 2
  EXPECT_FALSE(shard->PullReady(0, 2));
  EXPECT_TRUE(shard->PullReady(1, 1));
  EXPECT_EQ(shard->Blockers(0, 2), (std::vector<int>{2}));

  EXPECT_EQ(shard->Push(2, 0, 1, g.data()), 3);  // clocks 2 1 1
  EXPECT_TRUE(shard->PullReady(0, 2));
  EXPECT_EQ(shard->Blockers(0, 2), std::vector<int>{});
  EXPECT_FALSE(shard->PullReady(0, 3));
  EXPECT_EQ(shard->Blockers(0, 3), (std::vector<int>{1, 2}));

  EXPECT_EQ(shard->Push(0, 4, 1, g.data()), 0);  // clocks 3 1 1
  EXPECT_EQ(shard->Push(1, 4, 1, g.data()), 1);  // clocks 3 2 1
  EXPECT_FALSE(shard->PullReady(0, 3));
  EXPECT_EQ(shard->Blockers(0, 3), (std::vector<int>{2}));
  EXPECT_EQ(shard->Push(2, 5, 1, g.data()), 1);  // clocks 3 2 2
  EXPECT_TRUE(shard->PullReady(0, 3));
  EXPECT_TRUE(shard->PullReady(1, 2));
  EXPECT_TRUE(shard->PullReady(2, 2));
  EXPECT_EQ(shard->version(), 7);
  EXPECT_EQ(shard->clock(0), 3);
  EXPECT_EQ(shard->clock(1), 2);
  EXPECT_EQ(shard->clock(2), 2);
}

TEST(ShardSsp, ADroppedWorkersClockNoLongerHoldsPullsAndItsPushesAreRefused) {
  auto shard = MakeShard(Consistency::kSsp, 3, /*staleness=*/1);
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  shard->Push(0, 0, 1, g.data());
  shard->Push(0, 1, 1, g.data());
  shard->Push(1, 2, 1, g.data());  // clocks 2 1 0: worker 2 holds worker 0 back
  EXPECT_FALSE(shard->PullReady(0, 3));
  EXPECT_EQ(shard->Blockers(0, 3), (std::vector<int>{1, 2}));
  shard->DropWorker(2);
  EXPECT_TRUE(shard->dropped(2));
  EXPECT_EQ(shard->Blockers(0, 3), (std::vector<int>{1}));
  shard->Push(1, 3, 1, g.data());  // clocks 2 2 (0, dropped)
  EXPECT_TRUE(shard->PullReady(0, 3));
  const int64_t version = shard->version();
  EXPECT_THROW(shard->Push(2, version, 1, g.data()), std::invalid_argument);
  EXPECT_EQ(shard->version(), version);  // the late push changed nothing
  EXPECT_EQ(shard->clock(2), 0);
}

TEST(ShardSync, ALostWorkersPartialPushIsDroppedAndItsSliceComesFromAnother) {
  const auto init = Init();
  const auto g0 = Grad(0), g1 = Grad(1), g2 = Grad(2), junk = Grad(5);
  const KeyRange all{100, 100 + kN}, head{100, 100 + kN / 2};
  // Undisturbed: workers 0, 1, 2 push their slices.
  auto plain = MakeShard(Consistency::kSync, 3, 0, all);
  plain->Init(init.data());
  plain->Push(0, 0, 4, g0.data());
  plain->Push(1, 0, 4, g1.data());
  plain->Push(2, 0, 4, g2.data());
  // Worker 2 sends a part of a push (other values) and is lost; slice 2 then comes complete
  // from another worker, before worker 1's push. The step equals the undisturbed one.
  auto shard = MakeShard(Consistency::kSync, 3, 0, all);
  shard->Init(init.data());
  shard->Push(0, 0, 4, g0.data());
  shard->Push(2, 0, 0, {head}, junk.data(), -1, /*more=*/true);
  shard->DropWorker(2);
  EXPECT_TRUE(shard->dropped(2));
  EXPECT_FALSE(shard->pushed(2));
  shard->Push(2, 0, 4, g2.data());
  shard->Push(1, 0, 4, g1.data());
  EXPECT_EQ(shard->version(), 1);
  EXPECT_EQ(*shard->values(), *plain->values());
  // A slice already complete when its worker was lost: another copy is a second push.
  shard->Push(2, 1, 4, g2.data());
  shard->DropWorker(2);
  EXPECT_TRUE(shard->pushed(2));
  EXPECT_THROW(shard->Push(2, 1, 4, g2.data()), std::invalid_argument);
}

TEST(ShardSync, TheVersionBeforeIsKeptForExactPulls) {
  auto shard = MakeShard(Consistency::kSync, 1);
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  EXPECT_EQ(*shard->ValuesAt(0), init);
  EXPECT_EQ(shard->ValuesAt(1), nullptr);
  shard->Push(0, 0, 2, g.data());
  EXPECT_EQ(*shard->ValuesAt(0), init);  // unchanged by the step
  EXPECT_EQ(*shard->ValuesAt(1), *shard->values());
  shard->Push(0, 1, 0, g.data());  // no trips: the version advances, the values stay
  EXPECT_EQ(shard->ValuesAt(0), nullptr);
  EXPECT_EQ(*shard->ValuesAt(1), *shard->ValuesAt(2));
}

TEST(Shard, DroppingAnUnknownWorkerIsRefused) {
  auto async = MakeShard(Consistency::kAsync, 2);
  EXPECT_THROW(async->DropWorker(2), std::invalid_argument);
}

TEST(ShardSync, AStopFlagEndsTrainingForEveryWorkerAtTheNextVersion) {
  auto shard = MakeShard(Consistency::kSync, 2);
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  EXPECT_FALSE(shard->Stopping(0));
  // Worker 0 was told to stop while computing on version 0; worker 1 was not (yet).
  shard->Push(0, 0, 1, g.data());
  shard->RequestStop(0);
  EXPECT_FALSE(shard->PullReady(1, 1));  // sync still waits for worker 1's push
  shard->Push(1, 0, 1, g.data());
  ASSERT_EQ(shard->version(), 1);
  EXPECT_TRUE(shard->PullReady(0, 1));
  EXPECT_FALSE(shard->Stopping(0));  // a reply for version 0 does not stop anyone
  EXPECT_TRUE(shard->Stopping(1));   // both workers' pulls of version 1 say: stop here
  shard->RequestStop(3);             // a later flag does not move the stop
  EXPECT_FALSE(shard->Stopping(0));
  EXPECT_TRUE(shard->Stopping(1));
}

TEST(ShardSsp, AStopFlagReleasesEveryWaitingPull) {
  auto shard = MakeShard(Consistency::kSsp, 2, /*staleness=*/0);
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  shard->Push(0, 0, 1, g.data());
  EXPECT_FALSE(shard->PullReady(0, 1));  // waits for worker 1's clock
  shard->RequestStop(0);                 // worker 1 stopped: nobody may wait for it any more
  EXPECT_TRUE(shard->PullReady(0, 1));
  EXPECT_TRUE(shard->PullReady(0, 5));
  EXPECT_TRUE(shard->Stopping(shard->version()));
}

TEST(ShardSsp, StalenessZeroIsLockstep) {
  auto shard = MakeShard(Consistency::kSsp, 2, /*staleness=*/0);
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  EXPECT_TRUE(shard->PullReady(0, 0));
  shard->Push(0, 0, 1, g.data());
  EXPECT_FALSE(shard->PullReady(0, 1));
  EXPECT_EQ(shard->Blockers(0, 1), std::vector<int>{1});
  shard->Push(1, 0, 1, g.data());
  EXPECT_TRUE(shard->PullReady(0, 1));
}

TEST(Shard, ValuesAreCopyOnWrite) {
  auto shard = MakeShard(Consistency::kAsync, 1);
  const auto init = Init(), g = Grad(0);
  shard->Init(init.data());
  const auto held = shard->values();  // e.g. a pull reply in flight
  shard->Push(0, 0, 1, g.data());
  EXPECT_EQ(*held, init);  // unchanged
  const auto v1 = Stepped(init, g, 1);
  EXPECT_EQ(*shard->values(), v1);
  EXPECT_NE(held.get(), shard->values().get());

  // Nobody holds the buffer: the step writes in place.
  const std::vector<float>* before = shard->values().get();
  shard->Push(0, 1, 1, g.data());
  EXPECT_EQ(shard->values().get(), before);
  EXPECT_EQ(*shard->values(), Stepped(v1, g, 1));

  // Init (a late duplicate) and sync steps copy too.
  const auto held2 = shard->values();
  const auto snapshot = *held2;
  const std::vector<float> other(kN, 3.0f);
  shard->Init(other.data());
  EXPECT_EQ(*held2, snapshot);
  EXPECT_EQ(*shard->values(), other);

  auto sync = MakeShard(Consistency::kSync, 2);
  sync->Init(init.data());
  const auto held3 = sync->values();
  sync->Push(0, 0, 1, g.data());
  sync->Push(1, 0, 1, g.data());
  EXPECT_EQ(*held3, init);
  EXPECT_EQ(*sync->values(), Stepped(init, Add(g, g), 2));
}

TEST(Shard, RestoreSetsValuesVersionAndClocks) {
  auto shard = MakeShard(Consistency::kSsp, 2, 1);
  const auto init = Init();
  shard->Restore(init, 9, {4, 5});
  EXPECT_TRUE(shard->initialized());
  EXPECT_EQ(*shard->values(), init);
  EXPECT_EQ(shard->version(), 9);
  EXPECT_EQ(shard->clock(0), 4);
  EXPECT_EQ(shard->clock(1), 5);
  EXPECT_TRUE(shard->PullReady(0, 5));
  EXPECT_FALSE(shard->PullReady(0, 6));
  EXPECT_THROW(shard->Restore(std::vector<float>(kN - 1), 0, {0, 0}), std::invalid_argument);
  EXPECT_THROW(shard->Restore(init, 0, {0}), std::invalid_argument);
}

TEST(ShardClipping, SyncWaitsForTheGlobalNormThenClips) {
  auto shard = MakeShard(Consistency::kSync, 2);
  shard->set_clip_norm(1.0);
  const auto init = Init();
  shard->Init(init.data());
  const auto g = Grad(1);
  shard->Push(0, 0, 1, g.data());
  shard->Push(1, 0, 1, g.data());
  // The aggregate (mean = g) is complete but not applied: it waits for the global norm.
  ASSERT_TRUE(shard->awaiting_norm());
  EXPECT_EQ(shard->version(), 0);
  EXPECT_FALSE(shard->PullReady(0, 1));
  double sq = 0;
  for (float x : g) sq += double(x) * x;
  EXPECT_DOUBLE_EQ(shard->partial_squared_norm(), sq);
  EXPECT_THROW(shard->Push(0, 0, 1, g.data()), std::invalid_argument);
  // A global norm of 4 (other shards included) scales the gradient by 1 / (4 + 1e-6).
  shard->CompleteStep(4.0);
  EXPECT_FALSE(shard->awaiting_norm());
  EXPECT_EQ(shard->version(), 1);
  const float scale = static_cast<float>(1.0 / (4.0 + 1e-6));
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_FLOAT_EQ((*shard->values())[i], init[i] - static_cast<float>(kLr) * (g[i] * scale));
  }
  EXPECT_THROW(shard->CompleteStep(4.0), std::invalid_argument);
}

TEST(ShardClipping, AsyncClipsEachPushByItsOwnNorm) {
  auto shard = MakeShard(Consistency::kAsync, 2);
  shard->set_clip_norm(2.0);
  const auto init = Init();
  shard->Init(init.data());
  const auto g = Grad(2);
  EXPECT_THROW(shard->Push(0, 0, 1, g.data()), std::invalid_argument);  // no norm given
  // Below the bound: unchanged SGD step.
  shard->Push(0, 0, 1, g.data(), /*mean_grad_norm=*/1.0);
  EXPECT_EQ(*shard->values(), Stepped(init, g, 1));
  // Above: scaled by 2 / (8 + 1e-6).
  const auto before = *shard->values();
  shard->Push(1, 0, 1, g.data(), /*mean_grad_norm=*/8.0);
  const float scale = static_cast<float>(2.0 / (8.0 + 1e-6));
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_FLOAT_EQ((*shard->values())[i], before[i] - static_cast<float>(kLr) * (g[i] * scale));
  }
}

// Found by fuzzing: a push for version INT64_MIN overflowed the staleness.
TEST(Shard, RefusesAPushForANegativeVersion) {
  for (Consistency mode : {Consistency::kSync, Consistency::kAsync, Consistency::kSsp}) {
    auto shard = MakeShard(mode, 2, 1);
    shard->Init(Init().data());
    const std::vector<float> g(kN, 1.0f);
    for (int64_t v : {int64_t{-1}, std::numeric_limits<int64_t>::min()}) {
      EXPECT_THROW(shard->Push(0, v, 1, g.data()), std::invalid_argument);
    }
    EXPECT_EQ(shard->version(), 0);
  }
}

// A sparse push holds some keys; the others' gradient is zero. It must step exactly as the dense
// push of the same gradient, in every mode.
TEST(Shard, SparsePushStepsAsTheDensePushWithZerosElsewhere) {
  for (Consistency mode : {Consistency::kSync, Consistency::kAsync, Consistency::kSsp}) {
    auto dense = MakeShard(mode, 2, 5), sparse = MakeShard(mode, 2, 5);
    dense->Init(Init().data());
    sparse->Init(Init().data());
    const std::vector<KeyRange> spans = {{100, 103}, {110, 111}, {130, 137}};
    for (int w = 0; w < 2; ++w) {
      const auto g = Grad(w);
      std::vector<float> full(kN, 0.f), packed;
      for (const auto& r : spans) {
        for (int64_t k = r.begin; k < r.end; ++k) {
          full[k - 100] = g[k - 100];
          packed.push_back(g[k - 100]);
        }
      }
      dense->Push(w, 0, 3, full.data());
      sparse->Push(w, 0, 3, spans, packed.data());
    }
    EXPECT_EQ(*sparse->values(), *dense->values());
    EXPECT_EQ(sparse->version(), dense->version());
  }
}

TEST(Shard, AWorkerThatTouchesNoKeyStillCountsInTheSyncStep) {
  auto shard = MakeShard(Consistency::kSync, 2);
  shard->Init(Init().data());
  shard->Push(0, 0, 2, {}, nullptr);
  EXPECT_EQ(shard->version(), 0);
  const auto g = Grad(1);
  shard->Push(1, 0, 2, g.data());
  EXPECT_EQ(shard->version(), 1);
  EXPECT_EQ(*shard->values(), Stepped(Init(), g, 4));
}

TEST(Shard, SpansOutsideTheRangeOrUnsortedAreRefused) {
  auto shard = MakeShard(Consistency::kSync, 2);
  shard->Init(Init().data());
  std::vector<float> v(8, 1.f);
  EXPECT_THROW(shard->Push(0, 0, 1, {{98, 102}}, v.data()), std::invalid_argument);
  EXPECT_THROW(shard->Push(0, 0, 1, {{130, 138}}, v.data()), std::invalid_argument);
  EXPECT_THROW(shard->Push(0, 0, 1, {{110, 112}, {100, 102}}, v.data()), std::invalid_argument);
  EXPECT_EQ(shard->clock(0), 0);  // nothing counted
}

// Float addition is not associative: a sync step must sum the pushes in worker order, so that
// the result does not depend on which push the network delivered first.
TEST(Shard, SyncSumsInWorkerOrderWhateverTheArrivalOrder) {
  OptimizerConfig c;
  c.name = "sgd";
  c.lr = 1;
  const std::vector<float> big = {1e8f}, one = {1.f}, minus_big = {-1e8f};
  const std::vector<const std::vector<float>*> grads = {&big, &one, &minus_big};
  std::vector<std::vector<float>> results;
  for (const std::vector<int>& order : std::vector<std::vector<int>>{
           {0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}, {0, 2, 1}}) {
    Shard shard({0, 1}, Consistency::kSync, 3, 0, MakeOptimizer(c, 1));
    const float zero = 0;
    shard.Init(&zero);
    for (int w : order) shard.Push(w, 0, 1, grads[w]->data());
    ASSERT_EQ(shard.version(), 1);
    results.push_back(*shard.values());
  }
  // (1e8 + 1) - 1e8 = 0 in float; -(0 / 3) = 0.
  for (const auto& r : results) EXPECT_EQ(r, std::vector<float>{0.f});
}

// Overlap: a sync push may come in parts (sent during backward) completed by a last push. The
// step is the one of the whole pushes, bit for bit, whatever order the parts of different
// workers arrive in.
TEST(Shard, SyncPushInPartsEqualsTheWholePushInAnyArrivalOrder) {
  OptimizerConfig c;
  c.name = "sgd";
  c.lr = 1;
  const std::vector<float> a = {1e8f, 3.f, 1.f}, b = {1.f, 1e8f, -5.f}, d = {-1e8f, -1e8f, 2.f};
  const std::vector<const std::vector<float>*> grads = {&a, &b, &d};
  Shard whole({0, 3}, Consistency::kSync, 3, 0, MakeOptimizer(c, 3));
  const std::vector<float> zero(3, 0.f);
  whole.Init(zero.data());
  for (int w = 0; w < 3; ++w) whole.Push(w, 0, 1, grads[w]->data());
  // Worker w sends keys [1, 3) as a part, then key 0 with the push that completes it.
  for (const std::vector<std::pair<int, bool>>& order :
       std::vector<std::vector<std::pair<int, bool>>>{
           {{2, true}, {1, true}, {2, false}, {0, true}, {1, false}, {0, false}},
           {{0, true}, {1, true}, {1, false}, {2, true}, {0, false}, {2, false}},
           {{1, true}, {1, false}, {0, true}, {2, true}, {2, false}, {0, false}}}) {
    Shard parts({0, 3}, Consistency::kSync, 3, 0, MakeOptimizer(c, 3));
    parts.Init(zero.data());
    for (const auto& [w, part] : order) {
      const auto& g = *grads[w];
      if (part) {
        parts.Push(w, 0, 0, {{1, 3}}, g.data() + 1, -1, /*more=*/true);
      } else {
        parts.Push(w, 0, 1, {{0, 1}}, g.data(), -1, /*more=*/false);
      }
    }
    ASSERT_EQ(parts.version(), 1);
    EXPECT_EQ(*parts.values(), *whole.values());
  }
}

TEST(Shard, PartsAreRefusedOutsideSyncAndAfterTheWorkersPush) {
  const std::vector<float> g(kN, 1.f);
  auto async = MakeShard(Consistency::kAsync, 2);
  async->Init(Init().data());
  EXPECT_THROW(async->Push(0, 0, 0, {{100, 101}}, g.data(), -1, true), std::invalid_argument);
  auto sync = MakeShard(Consistency::kSync, 2);
  sync->Init(Init().data());
  sync->Push(0, 0, 1, g.data());
  EXPECT_THROW(sync->Push(0, 0, 0, {{100, 101}}, g.data(), -1, true), std::invalid_argument);
}

}  // namespace
}  // namespace tteps::server

namespace tteps::server {
namespace {

// Pushes of two workers whose pieces say |G|^2 = 1 and S = 4 per trip (two pieces of 2 trips:
// Σ|g_p|^2 = 2 (4 + 8) = 24, Σ n_p^2 = 8; the step's |g|^2 = 16 + 16 = 32, so a mean-gradient
// norm of sqrt(32) / 4). B = 4; base batch 2, batch 4: gain (4/2 + 1) / (4/4 + 1) = 1.5.
TEST(ShardAdaScale, SyncWaitsForTheGlobalNormAndStepsWithTheGain) {
  auto shard = MakeShard(Consistency::kSync, 2);
  shard->set_adascale(std::make_unique<AdaScale>(2, 1.0));
  const auto init = Init();
  shard->Init(init.data());
  const auto g = Grad(1);
  shard->Push(0, 0, 2, {shard->range()}, g.data(), -1, false, {12, 4});
  shard->Push(1, 0, 2, {shard->range()}, g.data(), -1, false, {12, 4});
  ASSERT_TRUE(shard->awaiting_norm());
  shard->CompleteStep(std::sqrt(32.0) / 4);
  EXPECT_EQ(shard->version(), 1);
  EXPECT_DOUBLE_EQ(shard->lr_gain(), 1.5);
  // Mean gradient (g + g) / 4 = g / 2, at the rate 0.5 x 1.5.
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_FLOAT_EQ((*shard->values())[i], init[i] - static_cast<float>(kLr * 1.5) * (g[i] * 0.5f));
  }
  EXPECT_THROW(MakeShard(Consistency::kAsync, 2)->set_adascale(std::make_unique<AdaScale>(2, 1.0)),
               std::invalid_argument);
}

// A replica that receives the same pushes in another order holds the same bits.
TEST(ShardAdaScale, ReplicasFoldThePiecesInWorkerOrder) {
  auto a = MakeShard(Consistency::kSync, 3), b = MakeShard(Consistency::kSync, 3);
  for (auto* s : {a.get(), b.get()}) {
    s->set_adascale(std::make_unique<AdaScale>(3, 0.5));
    s->Init(Init().data());
  }
  const PieceNoise noise[] = {{0.1, 1}, {1e17, 4}, {3.3, 9}};
  const int64_t trips[] = {1, 2, 3};
  for (int step = 0; step < 3; ++step) {
    for (int w : {0, 1, 2}) {
      a->Push(w, step, trips[w], {a->range()}, Grad(w + step).data(), -1, false, noise[w]);
    }
    for (int w : {2, 0, 1}) {
      b->Push(w, step, trips[w], {b->range()}, Grad(w + step).data(), -1, false, noise[w]);
    }
    a->CompleteStep(3.0);
    b->CompleteStep(3.0);
  }
  EXPECT_EQ(a->StateHash(), b->StateHash());
  EXPECT_EQ(a->lr_gain(), b->lr_gain());
}

}  // namespace
}  // namespace tteps::server
