// A worker's report of its last training window (the steps since its previous report): the
// typed message a worker sends the scheduler, which writes it to metrics.jsonl as a "train"
// line and hands it to the accumulation policy. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/gradient_noise.h"
#include "common/json_writer.h"

namespace tteps {

struct TrainReport {
  int32_t worker = 0;
  int64_t step = 0;   // steps done at the end of the window
  int64_t epoch = 0;  // epoch of the window's last slice
  double wall_s = 0;  // since training started
  double loss = 0;    // mean per-trip loss over the window
  int64_t trips = 0;
  double trips_per_s = 0;
  int64_t accumulation = 1;  // micro-batches per step in this window
  // Sync and ring after a loss: micro-batches of lost workers' slices this worker computed in
  // the window's last step besides its own (compute_s and trips include them).
  int64_t adopted = 0;
  double compute_s = 0, wait_s = 0;  // mean per step
  double window_s = 0;               // the window's wall time
  double peak_rss_mb = 0;
  double peak_private_mb = 0, peak_shared_mb = 0;  // common/peak_memory.h
  // What computed the products on the CPU (model/deeptte/compute_path.h, set by the worker):
  // tteps' kernels, and the BLAS of LibTorch's own operators.
  std::string cpu_gemm, blas;
  std::vector<double> step_losses;  // mean loss of each step of the window
  // Each step's compute (adopted micro-batches included) and own accumulation: a policy's
  // decision takes effect a step or two after the window it was made on, so a window may hold
  // steps of two accumulations, and the speed is read from those at the current one.
  std::vector<double> step_compute_s;
  std::vector<int64_t> step_accumulation;
  // Per-step means that only some exchanges have, by name: push_s, pull_s and staleness (the
  // parameter servers), allreduce_s (the ring modes).
  std::vector<std::pair<std::string, double>> exchange;
  // The gradient noise (common/gradient_noise.h), averaged over the window's steps that could
  // measure it (those of two or more micro-batches: the first one's gradient against the
  // step's); noise_steps 0 when none could.
  int64_t noise_steps = 0;
  NoiseEstimate noise;

  // The named exchange value, 0 if this exchange has none.
  double Exchange(const std::string& name) const;
  // The "train" line of metrics.jsonl.
  JsonObject ToJson() const;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker, step, epoch, wall_s, loss, trips, trips_per_s, accumulation, compute_s, wait_s,
       window_s, peak_rss_mb, step_losses, exchange, noise_steps, noise.grad_sq, noise.trace,
       adopted, step_compute_s, step_accumulation, peak_private_mb, peak_shared_mb, cpu_gemm, blas);
  }
};

// Sums a window's steps into a report.
class TrainWindow {
 public:
  void AddStep(double loss_sum, int64_t trips, double compute_s, double wait_s, double wall_s,
               int64_t accumulation);
  // A step's gradient noise estimate (not every step has one).
  void AddNoise(const NoiseEstimate& e) { noise_.Add(e); }
  int64_t steps() const { return steps_; }
  double PerStep(double total) const { return steps_ > 0 ? total / steps_ : 0.0; }
  // The report of the window so far; the window starts over.
  TrainReport Take(int worker, int64_t step, int64_t epoch, double wall_s, int64_t accumulation,
                   int64_t adopted = 0);

 private:
  double loss_ = 0, compute_ = 0, wait_ = 0, wall_ = 0;
  int64_t trips_ = 0, steps_ = 0;
  std::vector<double> step_losses_, step_compute_;
  std::vector<int64_t> step_accumulation_;
  NoiseSum noise_;
};

}  // namespace tteps
