// What a running job shows while it runs: metrics.jsonl's train lines, TensorBoard's event file
// (out_dir/tb: each worker's scalars, the job's once per step, evaluations, membership changes
// as text) and the gauges that --metrics_port serves to Prometheus. A job of more workers than
// --worker_series shows, in their place, how the workers spread once per job step (min, median,
// max): its outputs then grow with the steps, not with steps times workers.
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
#include "scheduler/worker_book.h"

namespace tteps::scheduler {

class LiveOutputs {
 public:
  // Opens out_dir/tb; where that fails the job goes on without TensorBoard (logged).
  // `per_worker`: a line, series and gauges per worker; else the workers' spread.
  LiveOutputs(RunOutput* out, bool per_worker);
  // --metrics_port: where the gauges go (MetricsEndpoint::Publish).
  void set_publish(std::function<void(std::string)> publish) { publish_ = std::move(publish); }
  bool per_worker() const { return per_worker_; }
  // A worker's report.
  void Train(const TrainReport& r);
  // The step every live worker has reported, once: the job's mean loss and summed speed, and,
  // without per-worker outputs, `spread` (asked of it only then).
  void JobStep(int64_t step, double loss, double trips_per_s, double wall_s,
               const std::function<WorkerSpread()>& spread);
  // An evaluation that measured something.
  void Eval(const EvalOutcome& r);
  // A change of the membership, as text at `step`.
  void Membership(int64_t step, const std::string& text);
  // Publishes the job's gauges (asked of `gauges` only then), at most every 500 ms.
  void Publish(const std::function<JobGauges()>& gauges);

 private:
  void Spread(int64_t step, double wall_s, const WorkerSpread& s);

  RunOutput* out_;
  bool per_worker_;
  std::unique_ptr<EventFile> tensorboard_;  // null if it could not be made
  int64_t job_step_ = -1;                   // the last step of the job's own outputs
  JobMetrics metrics_;
  std::function<void(std::string)> publish_;
  Clock::time_point next_publish_{};
};

}  // namespace tteps::scheduler
