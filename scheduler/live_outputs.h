// What a running job shows while it runs: TensorBoard's event file (out_dir/tb: each worker's
// scalars, the job's once per step, evaluations, membership changes as text) and the gauges
// that --metrics_port serves to Prometheus.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/run_output.h"
#include "common/topics/train_report.h"
#include "scheduler/evaluation.h"
#include "scheduler/event_file.h"
#include "scheduler/job_metrics.h"

namespace tteps::scheduler {

class LiveOutputs {
 public:
  // Opens out_dir/tb; where that fails the job goes on without TensorBoard (logged).
  explicit LiveOutputs(RunOutput* out);
  // --metrics_port: where the gauges go (MetricsEndpoint::Publish).
  void set_publish(std::function<void(std::string)> publish) { publish_ = std::move(publish); }
  // A worker's report. `job_step` (the step every live worker has reported), `loss` and
  // `trips_per_s` are the job's.
  void Train(const TrainReport& r, int64_t job_step, double loss, double trips_per_s);
  // An evaluation that measured something.
  void Eval(const EvalOutcome& r);
  // A change of the membership, as text at `step`.
  void Membership(int64_t step, const std::string& text);
  // Publishes the job's gauges (asked of `gauges` only then), at most every 500 ms.
  void Publish(const std::function<JobGauges()>& gauges);

 private:
  std::unique_ptr<EventFile> tensorboard_;  // null if it could not be made
  int64_t tensorboard_job_step_ = -1;       // the last step of the job's own scalars
  JobMetrics metrics_;
  std::function<void(std::string)> publish_;
  Clock::time_point next_publish_{};
};

}  // namespace tteps::scheduler
