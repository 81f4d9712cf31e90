// How a step's gradients are combined across workers: the seam below the step driver, in the
// manner of PyTorch c10d's communication hook or ps-lite's KVWorker. One implementation per way
// of combining: parameter servers (sync, async, SSP), ring allreduce, parameter averaging, and
// local (nothing to combine). The driver never asks which one it has: it starts the job, begins
// and finishes each step, pushes the slices it computes for lost workers, settles the weights
// before anything else reads them, and asks for a report. Torch-free interface.
#pragma once

#include <cstdint>
#include <utility>

#include "common/gradient_noise.h"
#include "common/topics/train_report.h"
#include "model/row_spans.h"

namespace tteps {

// What the driver says just before the backward of a step's last micro-batch (an exchange that
// overlaps communication with backward starts here).
struct StepStart {
  int64_t trips = 0;       // the step's trips on this worker (its own slice)
  bool stop_vote = false;  // this worker was asked to stop (time budget)
  // Sparse exchanges (wants_rows): the embedding rows this step's trips use, which its push
  // carries.
  const TableRows* rows = nullptr;
};

// The end of a step: the model's gradients hold the sum, over the step's `trips` trips, of the
// per-trip loss gradients of this worker's own slice.
struct StepEnd {
  int64_t step = 0;
  int64_t trips = 0;
  bool stop_vote = false;
  bool planned_last = false;  // the plan's last step: nothing more is fetched after it
  PieceNoise pieces;          // --lr_scaling adascale: the own slice's pieces
  // Sparse exchanges: the rows the next step's trips (and the slices computed for lost
  // workers) will read, which the pull fetches.
  const TableRows* next_rows = nullptr;
  // After a result with view_changed: the step's push went out; wait for its end again.
  bool again = false;
};

struct ExchangeResult {
  bool stop = false;     // the workers agreed that training ends after this step
  double compute_s = 0;  // computation inside the exchange (gradient copies, optimizer step)
  double wait_s = 0;     // time spent waiting for other workers
  // The wait for the step's end stopped because the scheduler changed this worker's part of
  // the job while it waited (sync: a lost worker's slice given to it, which the wait may need;
  // or a pause): the driver takes the change (computes and pushes the slices now its own), then
  // finishes the step again with `again` set. Nothing else in the result holds then.
  bool view_changed = false;
};

// A lost worker's slice of a step, computed here (sync and ring): the model's gradients hold
// its sum over `trips` trips.
struct SlicePush {
  int slice = 0;
  int64_t step = 0;
  int64_t trips = 0;
  PieceNoise pieces;
};

// Which weights the model must hold before something other than a training step reads them.
enum class Weights {
  kFetched,  // every weight the last Finish fetched (an evaluation, the end of training)
  kExact,    // every weight of the version the current step is computed on, all keys (a newly
             // adopted slice: a sparse pull left the rows of its trips stale)
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  // Once every worker is ready: the model gets the job's weights for step `first_step` (a
  // fresh job's from worker 0). `rows`: sparse exchanges, the rows the first step reads.
  virtual void Start(int64_t first_step, const TableRows* rows) = 0;
  virtual void BeginStep(const StepStart& /*s*/) {}
  // Combines the step's gradients with the other workers' and leaves the next step's weights in
  // the model, or says that the view changed.
  virtual ExchangeResult Finish(const StepEnd& e) = 0;
  // Sends a lost worker's slice of the current step as that slice's gradient. An exchange
  // whose mode cannot take over a slice throws std::logic_error naming the mode.
  virtual void PushSlice(const SlicePush& p) = 0;
  virtual void Settle(Weights /*which*/) {}
  // Adds this exchange's own per-step means over the window's `steps` steps to the report
  // (push and pull times, staleness, allreduce time) and starts a new window.
  virtual void Report(TrainReport* /*report*/, int64_t /*steps*/) {}

  // A sparse exchange sends and fetches only the embedding rows steps use (model/row_spans.h):
  // the driver passes them in StepStart, StepEnd and Start.
  bool wants_rows() const { return wants_rows_; }
  // Whether every worker holds the same weights after `steps` steps (parameter averaging: only
  // right after an average). Evaluations of a worker's weights wait for such a step.
  bool Agreed(int64_t steps) const { return steps % agree_every_ == 0; }
  // Seconds the forward passes spent, since the last call, waiting for weights still arriving
  // (an exchange whose Finish leaves the rest of its pull to arrive block by block while the
  // next step's forward runs). The driver counts them as communication, not compute.
  double TakeForwardWaitS() { return std::exchange(forward_wait_s_, 0.0); }

 protected:
  bool wants_rows_ = false;
  int64_t agree_every_ = 1;
  double forward_wait_s_ = 0;
};

}  // namespace tteps
