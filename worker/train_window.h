// A worker's metrics window: the steps since its last metrics line, summed, and the "train"
// line that reports them (the fields every mode shares; a mode adds its own). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json_writer.h"

namespace tteps {

struct TrainWindow {
  double loss = 0, compute = 0, wait = 0, wall = 0;  // sums over the window's steps
  int64_t trips = 0, steps = 0;
  std::vector<double> step_losses;  // mean loss of each step, for the accumulation policy

  void AddStep(double loss_sum, int64_t step_trips, double compute_s, double wait_s, double wall_s);
  double PerStep(double total) const { return steps > 0 ? total / steps : 0.0; }
  // type, worker, step, epoch, wall_s, loss, trips, trips_per_s, alpha, compute_s, wait_s,
  // window_s, step_losses.
  JsonObject Json(int worker, int64_t step, int64_t epoch, double wall_s, int64_t alpha) const;
};

// The "start" line a worker sends once it is ready to train. When every worker has sent it,
// the scheduler starts them all (kGo) and its training clock (trips/s, --max_train_s, train_s
// of evaluations).
std::string TrainStartJson(int worker);

}  // namespace tteps
