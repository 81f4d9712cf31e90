// The ring exchange when a worker leaves at a step boundary (launch/tteps --release): the leaver
// completed its last step's collectives, while each survivor may still wait for the last
// message of one of them when the leave is declared, and give it up. Every survivor must then
// run the same collectives in the same order on the rebuilt ring. Over a scripted ring (this
// worker's end of it; the others hold what it holds), so without peers or timing.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/model_params.h"
#include "tests/unit/model/deeptte/test_trips.h"
#include "tests/unit/worker/scripted_link.h"
#include "worker/collectives/allreduce.h"
#include "worker/exchange/exchanges.h"
#include "worker/exchange/worker_group.h"
#include "worker/step_driver.h"

namespace tteps {
namespace {

using testing_util::SampleSlice;
using testing_util::SampleStats;

constexpr size_t kHashPieces = 4;  // floats per member in the identity check (identity_check.cc)

// This worker's end of a ring of `size` members whose others hold what it holds: a gather of a
// value or a hash per member finds this member's in every member's place, and any other sum
// (the start's weights, a gradient bucket) finds zeros added. `on_sum(n)` sees each sum first
// and may throw, as a ring that loses a member does.
class ScriptedRing : public collectives::Allreduce {
 public:
  ScriptedRing(int size, int position, std::function<void(size_t n)> on_sum)
      : size_(static_cast<size_t>(size)),
        position_(static_cast<size_t>(position)),
        on_sum_(std::move(on_sum)) {}

  std::string name() const override { return "scripted"; }

  void Sum(float* data, size_t n, double /*timeout_s*/) override {
    on_sum_(n);
    if (n != size_ && n != size_ * kHashPieces) return;
    const size_t per = n / size_;
    const float* mine = data + position_ * per;
    for (size_t r = 0; r < size_; ++r) {
      if (r != position_) std::copy(mine, mine + per, data + r * per);
    }
  }

 private:
  size_t size_, position_;
  std::function<void(size_t)> on_sum_;
};

TEST(RingExchange, ACheckGivenUpForALeavingWorkerIsNotRunAgainByOneSurvivorAlone) {
  // Worker 2 of 3 leaves after step 5, a check step (--check_every 5): it completed the check,
  // so survivor 1 may have completed it too and be computing step 6, while this one (worker 0)
  // gave it up, waiting for its last message. Survivor 1 runs no check after step 6, so this
  // one must not either: its 8 floats of hashes would meet survivor 1's first gradient bucket of
  // step 7, and the job fail (seen with the roles swapped: "ring message 0 from worker 0 holds
  // 300808 bytes, 16 expected").
  torch::manual_seed(1);
  deeptte::DeepTTE model(deeptte::ModelConfig{}, SampleStats());
  const data::TripVector trips = SampleSlice(0, 200);
  TrainConfig train;
  train.batch_size = 32;  // 7 steps per epoch
  train.epochs = 2;
  train.log_every = 5;

  int64_t computed = -1;               // the last step computed (0-based)
  std::vector<size_t> rebuilt_sums;    // the sizes of the sums on the ring of the survivors
  std::vector<int64_t> checked_after;  // ... and the step each of its checks followed
  WorkerGroupOptions o;
  o.worker = 0;
  o.num_workers = 3;
  o.check_every = 5;
  o.rebuild = [&] {
    RingView ring;
    ring.ids = {0, 1};
    ring.allreduce = std::make_unique<ScriptedRing>(2, 0, [&](size_t n) {
      rebuilt_sums.push_back(n);
      if (n == 2 * kHashPieces) checked_after.push_back(computed);
    });
    return ring;
  };
  auto first = std::make_unique<ScriptedRing>(3, 0, [](size_t n) {
    if (n == 3 * kHashPieces) {  // the check after step 5, while worker 2 leaves
      throw collectives::MembershipChanged("ring allreduce on worker 0 abandoned: lost a worker");
    }
  });
  auto group = std::make_unique<WorkerGroup>(*model, std::move(first), o, nullptr);
  auto exchange =
      MakeRingExchange(*model, OptimizerConfig{}, std::move(group), /*bucket_mb=*/0, nullptr);

  DriverOptions d;
  d.worker = 0;
  d.num_workers = 3;
  ScriptedLink hooks;
  hooks.computing = [&](int64_t step) {
    if (step >= 0) computed = step;
  };
  const DriverResult r = StepDriver(*model, trips, train, d, &hooks, exchange.get()).Run();
  EXPECT_EQ(r.steps, 14);

  // First the steps each survivor completed, then every step from the 6th on in one bucket
  // (trip count and stop vote with it); checks only where survivor 1 runs them too: after
  // step 10 and after the last.
  const size_t bucket = static_cast<size_t>(LayoutOf(*model).total()) + 2;
  std::vector<size_t> expected = {2};
  for (int64_t step = 5; step < 14; ++step) {
    expected.push_back(bucket);
    if (step == 9 || step == 13) expected.push_back(2 * kHashPieces);
  }
  EXPECT_EQ(checked_after, (std::vector<int64_t>{9, 13}));
  EXPECT_EQ(rebuilt_sums, expected);
}

}  // namespace
}  // namespace tteps
