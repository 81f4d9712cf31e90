// Single-process training, the reference that every distributed mode must agree with: the
// step driver over the local exchange, evaluating inline. With --slices N it is the reference of
// a sync job with N slices, on any number of workers.
#pragma once

#include <vector>

#include "common/job_config.h"
#include "common/run_output.h"
#include "common/trace.h"
#include "model/best_weights.h"
#include "model/data/trips.h"
#include "model/deeptte/deeptte.h"
#include "model/evaluator.h"
#include "worker/step_driver.h"

namespace tteps {

struct TrainResult {
  int64_t steps = 0;
  int64_t epochs = 0;        // epochs started
  int64_t trips = 0;         // trips trained on
  double train_seconds = 0;  // wall time in training steps (evaluations excluded)
  double wall_seconds = 0;
  double startup_s = 0;    // from the process's start to training
  double last_loss = 0;    // mean loss of the last logged window
  bool evaluated = false;  // false: no evaluation set, so no evaluation
  EvalResult final_eval;
  BestWeights best;              // --keep_best: the weights of the best evaluation
  int64_t early_stop_step = -1;  // --patience: the evaluation's step that stopped training
};

class LocalTrainer {
 public:
  // `out` may be null (tests); otherwise metrics lines go there.
  LocalTrainer(deeptte::DeepTTE model, const data::Trips& train, const data::Trips& eval,
               const JobConfig& config, RunOutput* out);
  TrainResult Run();
  // --trace: spans of compute, optimizer and evaluation (null: none).
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }

 private:
  void LogEval(const EvalResult& r, int64_t step, int64_t epoch, double wall_s, double train_s);
  // The step loop's options: accumulation, time budget, the noise meter's pieces.
  DriverOptions Options() const;
  // --slices N: this process computes every slice of the global batch, as a sync job's workers
  // would, each on its own (the link adopts the others before the first step).
  void SliceEverything(DriverOptions* o) const;
  // What the step loop asks of a local job (local_trainer.cc).
  class Link;

  deeptte::DeepTTE model_;
  const data::Trips& train_;
  const data::Trips& eval_;
  JobConfig config_;
  RunOutput* out_;
  Tracer* tracer_ = nullptr;
};

}  // namespace tteps
