// The running job as Prometheus sees it (the scheduler's --metrics_port): the job's phase,
// step, speed, membership and refusals, the last evaluation, and each worker's last report,
// rendered in the text exposition format (version 0.0.4).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/topics/train_report.h"
#include "scheduler/worker_book.h"

namespace tteps::scheduler {

struct JobGauges {
  std::string mode, phase;
  int64_t step = 0, planned_steps = 0;
  double trips_per_s = 0, loss = 0, train_s = 0;
  int workers_live = 0, workers_lost = 0;
  int64_t membership_events = 0, refused_messages = 0;
};

class JobMetrics {
 public:
  // `per_worker`: gauges per worker (each one's last report); else the workers' spread.
  explicit JobMetrics(bool per_worker) : per_worker_(per_worker) {}
  void SetJob(const JobGauges& job) { job_ = job; }
  void Observe(const TrainReport& report) { workers_[report.worker] = report; }
  void SetSpread(const WorkerSpread& spread) { spread_ = spread; }
  void SetEval(int64_t step, double mape);
  // The exposition: every metric with its HELP and TYPE lines.
  std::string Text() const;

 private:
  bool per_worker_;
  WorkerSpread spread_;
  JobGauges job_;
  std::map<int, TrainReport> workers_;  // each worker's last report
  bool evaluated_ = false;
  int64_t eval_step_ = 0;
  double mape_ = 0;
};

}  // namespace tteps::scheduler
