// The one training loop. For every step: this worker's slices of the global batch (as many
// micro-batches as the accumulation says), forward and backward into the model's gradients,
// then the exchange combines them and leaves the next weights in the model. Around that the
// driver owns the time budget and max steps, the stop, the resume offset, the evaluation
// schedule, trace spans and the train reports. It never asks which mode it runs in.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "common/eval_schedule.h"
#include "common/job_config.h"
#include "common/slice_schedule.h"
#include "common/topics/train_report.h"
#include "common/trace.h"
#include "model/data/trips.h"
#include "model/deeptte/deeptte.h"
#include "worker/exchange/exchange.h"
#include "worker/step_commands.h"

namespace tteps {

struct DriverOptions {
  int worker = 0, num_workers = 1;
  int64_t accumulation = 1;         // micro-batches per step (a policy may change it)
  int64_t first_worker_batch = -1;  // slicing rule; -1: even split (or balanced)
  bool balanced_slices = false;     // slices of even estimated cost (worker/batch_slicer.h)
  int64_t slowdown_percent = 0;     // test knob: sleep this % of compute time after each step
  // ... only in the first slowdown_on_s of every slowdown_period_s training seconds (0: always)
  double slowdown_on_s = 0, slowdown_period_s = 0;
  int64_t start_step = 0;  // > 0 when resuming from a checkpoint
  // A worker that joined for a lost worker's slice: that slice's accumulation schedule (where
  // its stream stands at start_step, and how many micro-batches it draws). Unset: --accumulation
  // from the start.
  std::optional<SliceSchedule> own_schedule;
  // --lr_scaling adascale: each micro-batch of a slice is measured as this many pieces (0: off),
  // reported to the exchange with its push (StepEnd, SlicePush). A sync worker: 1, its
  // slice; local mode: the slices that many workers would take (cut by the two fields below),
  // so that it measures what a sync job of that many workers does.
  int64_t noise_pieces = 0;
  // The gradient noise of the train reports in Adam's geometry (worker/step_noise.h) with the
  // optimizer's beta2 and eps; otherwise in the plain gradient's (SGD, momentum).
  bool noise_adam = false;
  double noise_adam_beta2 = 0.999, noise_adam_eps = 1e-8;
  int64_t pieces_first_worker_batch = -1;
  bool pieces_balanced = false;
  // The driver's own clock ends training after this many training seconds (0: none; in a
  // distributed job the scheduler holds the budget and says so through its commands).
  double max_train_s = 0;
  Tracer* tracer = nullptr;  // compute and slowdown spans; the exchange adds its own
};

// The noise meter's geometry (--noise_geometry): Adam's where the optimizer is Adam and a step
// can be measured at all (an accumulation above 1, now or by a policy later; without one,
// keeping Adam's second moment would cost every step for nothing); the plain one otherwise.
void SetNoiseGeometry(const JobConfig& config, DriverOptions* o);

// What the step loop asks of the job around it: a distributed worker's link to the scheduler
// (worker/scheduler_link.h), or a local job's (worker/local_trainer.cc). The defaults ask
// nothing of anyone: a loop on its own.
class StepLink {
 public:
  virtual ~StepLink() = default;
  // Once the data and model are ready; returns when every worker is (the start barrier).
  virtual void Ready() {}
  // Whether training was asked to end by this process (local mode: --patience, a signal).
  virtual bool StopRequested() { return false; }
  // The scheduler's commands since the last call, in order (worker/step_commands.h). Drained
  // before each step (before its clock starts) and when a step's wait was cut short: a stop is
  // this worker's vote; a pause holds the next step until a resume (paused time is neither
  // training time nor a step's); an accumulation applies from the next draw; a lost worker's
  // slice is computed and pushed beside the own one from the step the worker is in; a released
  // one is left from the next step (and said so through Released).
  virtual std::vector<StepCommand> TakeCommands() { return {}; }
  // While paused: returns true once a command is queued, false when the job rolls back; throws
  // at its deadline.
  virtual bool AwaitCommand() { return false; }
  // This worker's own slice draws a new accumulation, before that step's push.
  virtual void AccumulationChanged(const AccumulationChange& /*change*/) {}
  virtual void Report(const TrainReport& /*report*/) {}
  // Whether this worker was asked to leave the job (a signal to it): the loop ends after the
  // step in progress, without a stop vote or a final evaluation (DriverResult::left).
  virtual bool LeaveRequested() { return false; }
  // The step whose slices are being computed (forward, backward, a slowdown), then -1 once
  // that ends: the heartbeat says so, and the others' waits on this worker know it is busy,
  // not gone.
  virtual void Computing(int64_t /*step*/) {}
  virtual void Released(int /*slice*/, int64_t /*step*/) {}
  // Whether this worker's weights are the job's (local mode, worker 0 of the ring modes), to
  // be evaluated by Evaluate after `steps` steps and `train_s` training seconds (the final one
  // once training ends). Its own time is not training time.
  virtual bool Evaluates() const { return false; }
  virtual void Evaluate(int64_t /*steps*/, int64_t /*epoch*/, double /*train_s*/, bool /*final*/) {}
};

struct DriverResult {
  int64_t steps = 0;         // steps taken (fewer than planned when the time budget ended them)
  int64_t epochs = 0;        // epochs started
  int64_t trips = 0;         // trips this worker trained on
  double train_seconds = 0;  // from the start barrier to the last step, evaluations excluded
  double last_loss = 0;      // mean loss of the last report's window
  bool left = false;         // ended by leave_requested after `steps` steps
};

class StepDriver {
 public:
  // `link` outlives the driver; null: a loop on its own.
  StepDriver(deeptte::DeepTTEImpl& model, const data::Trips& train, const TrainConfig& opts,
             DriverOptions o, StepLink* link, Exchange* exchange);
  // Runs every step; exceptions from the exchange (a peer that failed) pass through.
  DriverResult Run();

 private:
  deeptte::DeepTTEImpl& model_;
  const data::Trips& train_;
  TrainConfig opts_;
  DriverOptions o_;
  StepLink* link_;
  Exchange* exchange_;
};

}  // namespace tteps
