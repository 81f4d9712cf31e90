// What the workers reported in their train reports: each one's last step, epoch, loss and
// speed, its sums over the steps (times, payload bytes, trips) and its memory peaks. The
// coordinator reads the progress line, the evaluation schedule and summary.json from it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/topics/train_report.h"

namespace tteps::scheduler {

// How the live workers' last windows spread (a job too large for a line per worker).
struct WorkerSpread {
  int workers = 0;
  double loss_min = 0, loss_median = 0, loss_max = 0;
  double speed_min = 0, speed_median = 0, speed_max = 0;  // trips per second
  int slowest = -1;                                       // the worker of speed_min
};

struct WorkerProgress {
  int64_t step = 0, epoch = 0, trips = 0;
  double loss = 0, trips_per_s = 0;
  double compute_s = 0, push_s = 0, pull_s = 0, wait_s = 0;  // sums over steps
  double push_bytes = 0, pull_bytes = 0;                     // payload bytes, sums over steps
  double allreduce_s = 0;                                    // ring modes
  int64_t steps_timed = 0;
  double peak_rss_mb = 0, peak_private_mb = 0, peak_shared_mb = 0;
  std::string cpu_gemm, blas;  // the last report's (common/topics/train_report.h)
};

class WorkerBook {
 public:
  // A report's window: its per-step figures count for every step since the worker's last one.
  const WorkerProgress& Add(int worker, const TrainReport& r);
  // Where a worker starts (a resume's or a rollback's checkpoint step).
  void SetStep(int worker, int64_t step);
  int64_t StepOf(int worker) const;  // 0 before any report

  // A worker declared lost: it no longer counts among the live ones below.
  void Lose(int worker);
  // Over the live workers: the furthest step (0 without any) and the lowest-numbered one's
  // progress (empty without any).
  int64_t LiveMaxStep() const;
  WorkerProgress LiveFirst() const;
  // Over the live workers: the lowest step (0 without any), the mean loss and the summed speed
  // of their last windows. Kept up to date report by report: a report costs O(log W), not a pass
  // over every worker (thousands of reports a step).
  int64_t LiveMinStep() const { return live_steps_.empty() ? 0 : *live_steps_.begin(); }
  double LiveMeanLoss() const { return live_steps_.empty() ? 0 : loss_sum_ / live_steps_.size(); }
  double LiveTripsPerSecond() const { return speed_sum_; }
  // The live workers in the tallies above (those that reported, or were given a step).
  int LiveInTallies() const { return static_cast<int>(live_steps_.size()); }
  // Over the live workers that reported: a pass over them (once a job step, not a report).
  WorkerSpread LiveSpread() const;

  // Over every worker: the furthest step and epoch, the sums, and one peak per worker.
  int64_t MaxStep() const;
  int64_t MaxEpoch() const;
  WorkerProgress Sums() const;  // step and epoch: the maxima; peaks: unset
  std::vector<double> Peaks(double WorkerProgress::*field) const;
  // Each worker's text `field`, in worker order.
  std::vector<std::string> Texts(std::string WorkerProgress::*field) const;
  bool empty() const { return workers_.empty(); }

 private:
  // A live worker's part of the tallies, out before its progress changes and in after.
  void Leave(int worker);
  void Enter(int worker);

  std::map<int, WorkerProgress> workers_;
  std::set<int> lost_;
  std::multiset<int64_t> live_steps_;
  double loss_sum_ = 0, speed_sum_ = 0;
  int64_t changes_ = 0;  // since the sums were last added up afresh
};

}  // namespace tteps::scheduler
