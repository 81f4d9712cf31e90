#include "scheduler/compute_watch.h"

#include <gtest/gtest.h>

#include "common/busy_peers.h"

namespace tteps::scheduler {
namespace {

Clock::time_point At(double s) {
  return Clock::time_point{} + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(s) + std::chrono::hours(1));
}

TEST(ComputeWatch, NamesTheWorkersWhoseLastHeartbeatSaidTheyCompute) {
  ComputeWatch watch(30, 0);
  watch.Heard(2, 7, At(0));
  watch.Heard(0, 7, At(0));
  watch.Heard(1, -1, At(0));
  EXPECT_EQ(watch.Computing(), (std::vector<int32_t>{0, 2}));
  watch.Heard(2, -1, At(1));
  EXPECT_EQ(watch.Computing(), (std::vector<int32_t>{0}));
  watch.Forget(0);  // lost
  EXPECT_TRUE(watch.Computing().empty());
}

TEST(ComputeWatch, NamesAStepOncePerIntervalAndCountsFromItsFirstHeartbeat) {
  ComputeWatch watch(3, 0);
  watch.Heard(1, 4, At(10));
  watch.Heard(1, 4, At(12));  // the same step: still counted from 10
  EXPECT_TRUE(watch.TakeLong(At(12.5)).empty());
  auto named = watch.TakeLong(At(13.5));
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].worker, 1);
  EXPECT_EQ(named[0].step, 4);
  EXPECT_DOUBLE_EQ(named[0].computing_s, 3.5);
  EXPECT_TRUE(watch.TakeLong(At(15)).empty());  // named at 13.5: again at 16.5
  EXPECT_EQ(watch.TakeLong(At(16.6)).size(), 1u);
  // The next step starts its own count, even without a heartbeat saying "none" in between.
  watch.Heard(1, 5, At(17));
  EXPECT_TRUE(watch.TakeLong(At(19)).empty());
  EXPECT_EQ(watch.TakeLong(At(20.1)).at(0).step, 5);
}

TEST(ComputeWatch, AStepPastTheLimitIsOverItAndNoLimitNeverIs) {
  ComputeWatch limited(3, 10), unlimited(3, 0);
  for (ComputeWatch* w : {&limited, &unlimited}) w->Heard(0, 2, At(0));
  EXPECT_FALSE(limited.OverLimit(At(9.9)).has_value());
  const auto over = limited.OverLimit(At(10.5));
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->worker, 0);
  EXPECT_EQ(over->step, 2);
  EXPECT_FALSE(unlimited.OverLimit(At(1e6)).has_value());
}

TEST(BusyDeadline, CountsFromTheStartOrTheLastComputingSeenWhicheverIsLater) {
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(5));
  EXPECT_EQ(BusyDeadline(At(10), timeout, Clock::time_point{}), At(15));  // never seen
  EXPECT_EQ(BusyDeadline(At(10), timeout, At(8)), At(15));                // before the wait
  EXPECT_EQ(BusyDeadline(At(10), timeout, At(40)), At(45));               // while it waited
}

}  // namespace
}  // namespace tteps::scheduler
