// How a step's gradients are combined across workers: the seam below the step driver, in the
// manner of PyTorch c10d's communication hook or ps-lite's KVWorker. One implementation per way
// of combining: parameter servers (sync, async, SSP), ring allreduce, parameter averaging, and
// local (nothing to combine). The driver never asks which one it has. Torch-free interface.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/gradient_noise.h"
#include "worker/row_spans.h"
#include "worker/train_report.h"

namespace tteps {

struct ExchangeResult {
  bool stop = false;     // the workers agreed that training ends after this step
  double compute_s = 0;  // computation inside the exchange (gradient copies, optimizer step)
  double wait_s = 0;     // time spent waiting for other workers
};

// Finish or Repull stopped waiting for the next weights because the worker was given a lost
// worker's slice (sync), which that wait may need: the driver computes and pushes it
// (PushSlice), then calls Repull.
class ExchangeInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  // Before this worker reports ready (its set-up, not counted as training).
  virtual void Prepare(int64_t /*first_step*/) {}
  // A sparse exchange sends only the embedding rows steps use (worker/row_spans.h): the driver
  // then calls PushRows at the start of each step, before its backward (the rows its trips
  // use, which its push carries), and PullRows before Start and before each Finish (the rows
  // the next step's trips will read, which the pull fetches).
  virtual bool WantsRows() const { return false; }
  virtual void PushRows(const TableRows& /*rows*/) {}
  virtual void PullRows(const TableRows& /*rows*/) {}
  // Once every worker is ready: the model gets the job's weights for step `first_step`.
  virtual void Start(int64_t first_step) = 0;
  // Just before the backward of a step's last micro-batch, with the step's trip count and this
  // worker's stop vote: an exchange that overlaps communication with backward starts here.
  virtual void BeforeLastBackward(int64_t /*step_trips*/, bool /*stop_vote*/) {}
  // The model's gradients hold the sum, over the step's `trips` trips, of the per-trip loss
  // gradients. Combines them with the other workers' and leaves the next step's weights in the
  // model. `stop_vote`: this worker was asked to stop (time budget). `planned_last`: the last
  // step of the plan, after which nothing more is fetched.
  virtual ExchangeResult Finish(int64_t step, int64_t trips, bool stop_vote, bool planned_last) = 0;
  // --lr_scaling adascale: the pieces of the slice that the next Finish or PushSlice holds, for
  // the gain of the step's rate (common/adascale.h). Exchanges that do not scale ignore them.
  virtual void SetPushNoise(const PieceNoise& /*pieces*/) {}
  // Sync, after a worker was lost: the model's gradients hold the sum over `trips` trips of
  // `slice`'s share of step `step` (the lost worker's slice, computed here); they go to the
  // servers as that slice's push. Exchanges that cannot take over a slice throw.
  virtual void PushSlice(int slice, int64_t /*step*/, int64_t /*trips*/) {
    throw std::logic_error("this exchange cannot push slice " + std::to_string(slice));
  }
  // Before computing a newly adopted slice: the model gets every weight of the version the
  // current step is computed on (a sparse pull left the rows of the slice's trips stale).
  virtual void RefreshWeights() {}
  // After Finish(step, ...) threw ExchangeInterrupted (and the slices were pushed): waits for
  // what Finish would have (the next weights, or the last step's completion). May throw
  // ExchangeInterrupted again.
  virtual ExchangeResult Repull(int64_t /*step*/, bool /*planned_last*/) {
    throw std::logic_error("this exchange is never interrupted");
  }
  // Seconds the forward passes spent, since the last call, waiting for weights still arriving
  // (an exchange whose Finish leaves the rest of its pull to arrive block by block while the
  // next step's forward runs). The driver counts them as communication, not compute.
  virtual double TakeForwardWaitS() { return 0; }
  // The model then holds every weight the last Finish fetched: called before anything but a
  // training step reads the weights (evaluation, the end of training).
  virtual void Settle() {}
  // Whether every worker holds the same weights after `steps` steps (parameter averaging: only
  // right after an average). Evaluations of a worker's weights wait for such a step.
  virtual bool Agreed(int64_t /*steps*/) const { return true; }
  // Adds this exchange's own per-step means over the window's `steps` steps to the report
  // (push and pull times, staleness, allreduce time) and starts a new window.
  virtual void Report(TrainReport* /*report*/, int64_t /*steps*/) {}
};

}  // namespace tteps
