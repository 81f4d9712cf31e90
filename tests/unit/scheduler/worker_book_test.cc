// The workers' reports as the scheduler sums them: per-step figures over the steps since a
// worker's last report, the live workers' progress, and the job's totals.
#include "scheduler/worker_book.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <map>
#include <set>

namespace tteps::scheduler {
namespace {

TrainReport Window(int64_t step, double loss, double compute_s, double push_s) {
  TrainReport r;
  r.step = step;
  r.epoch = step / 10;
  r.loss = loss;
  r.trips = 64 * 5;
  r.trips_per_s = 100;
  r.compute_s = compute_s;
  r.exchange = {{"push_s", push_s}};
  r.peak_rss_mb = 10.0 * step;
  return r;
}

TEST(WorkerBook, SumsPerStepFiguresOverTheStepsSinceTheLastReport) {
  WorkerBook book;
  EXPECT_EQ(book.LiveMinStep(), 0);
  book.SetStep(0, 5);  // resumed at step 5
  book.Add(0, Window(10, 0.5, 0.2, 0.1));
  book.Add(0, Window(20, 0.3, 0.4, 0.1));
  const WorkerProgress sums = book.Sums();
  EXPECT_EQ(sums.steps_timed, 15);
  EXPECT_DOUBLE_EQ(sums.compute_s, 5 * 0.2 + 10 * 0.4);
  EXPECT_DOUBLE_EQ(sums.push_s, 15 * 0.1);
  EXPECT_EQ(sums.trips, 640);
  EXPECT_EQ(book.Peaks(&WorkerProgress::peak_rss_mb), (std::vector<double>{200}));
}

TEST(WorkerBook, TheLiveWorkersProgressLeavesTheLostOut) {
  WorkerBook book;
  book.Add(0, Window(12, 0.4, 0.1, 0));
  book.Add(1, Window(7, 0.2, 0.1, 0));
  book.Add(2, Window(30, 0.9, 0.1, 0));
  EXPECT_DOUBLE_EQ(book.LiveMeanLoss(), 0.5);
  book.Lose(2);
  book.Add(2, Window(31, 5, 0.1, 0));  // a late report of a lost worker counts for nothing live
  EXPECT_EQ(book.LiveMinStep(), 7);
  EXPECT_EQ(book.LiveMaxStep(), 12);
  EXPECT_EQ(book.MaxStep(), 31);
  EXPECT_DOUBLE_EQ(book.LiveMeanLoss(), 0.3);
  EXPECT_DOUBLE_EQ(book.LiveTripsPerSecond(), 200);
  EXPECT_EQ(book.LiveFirst().step, 12);
  EXPECT_EQ(book.MaxEpoch(), 3);
  EXPECT_EQ(book.StepOf(1), 7);
  EXPECT_EQ(book.StepOf(9), 0);
  book.Lose(0);
  EXPECT_EQ(book.LiveFirst().step, 7);
  // Every worker lost: nothing live is left (not a step past any).
  book.Lose(1);
  EXPECT_EQ(book.LiveMinStep(), 0);
  EXPECT_EQ(book.LiveMeanLoss(), 0);
}

// The live tallies follow thousands of reports as a pass over the workers would see them.
TEST(WorkerBook, TheLiveTalliesEqualAPassOverTheLiveWorkers) {
  WorkerBook book;
  std::map<int, TrainReport> last;
  std::set<int> lost;
  for (int i = 0; i < 5000; ++i) {
    const int w = (i * 7919) % 97;
    if (i % 613 == 0) {
      book.Lose(w);
      lost.insert(w);
      continue;
    }
    TrainReport r = Window(i / 50 + w % 3, 0.001 * ((i * 31) % 997), 0.1, 0);
    r.trips_per_s = (i * 13) % 101;
    book.Add(w, r);
    last[w] = r;
  }
  int64_t min_step = INT64_MAX;
  double loss = 0, speed = 0;
  int live = 0;
  for (const auto& [w, r] : last) {
    if (lost.count(w)) continue;
    min_step = std::min(min_step, r.step);
    loss += r.loss;
    speed += r.trips_per_s;
    ++live;
  }
  EXPECT_EQ(book.LiveMinStep(), min_step);
  EXPECT_NEAR(book.LiveMeanLoss(), loss / live, 1e-12);
  EXPECT_NEAR(book.LiveTripsPerSecond(), speed, 1e-9);
}

}  // namespace
}  // namespace tteps::scheduler
