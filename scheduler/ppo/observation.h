// What the agent sees of one worker's window, and the action space. Torch-free.
//
// Observation (kObservationSize floats):
//   0..4  the window's per-step training losses summarised as the seed paper does (initial,
//         minimum, maximum, final, largest step-to-step change), each normalised with a running
//         mean and variance over all windows seen;
//   5     alpha's position in [alpha_min, alpha_max] on a log2 scale (0 .. 1);
//   6     the worker's pure compute time per micro-batch relative to the mean over workers
//         (log2, clipped to +-2: > 0 means slower than average); in job scope the slowest
//         slice's (> 0: the workers differ, and a larger global batch can be split unevenly);
//   7     the share of its step spent waiting (for the slowest worker, a pull, an allreduce);
//   8     staleness s as s / (1 + s) (async and SSP; 0 in sync and ring modes);
//   9     the global batch M against the gradient noise scale B_noise: log2(M / B_noise) / 4,
//         clipped to +-1 (0 while the noise is unknown): above 0 a larger batch buys little;
//   10    this worker's compute per step relative to the slowest worker's, log2 / 4, clipped to
//         -1 .. 0 (0: it is the slowest, the one every other worker waits for); in job scope
//         the slices' mean (0: the split is balanced, no slice computes less than the slowest).
// In job scope 6 and 10 come from the measured compute, not from the wait (feature 7), which
// also holds the exchange and each step's jitter.
// Actions: 0 halves alpha, 1 keeps it, 2 doubles it, within [alpha_min, alpha_max].
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/gradient_noise.h"
#include "scheduler/ppo/gae.h"

namespace tteps::ppo {

inline constexpr int kObservationSize = 11;
inline constexpr int kNumActions = 3;

// One worker's window as its metrics line reports it.
struct WindowReport {
  int worker = 0;
  int64_t step = 0;
  int64_t alpha = 1;
  int64_t extra = 0;  // micro-batches of lost workers' slices it computed too (compute includes)
  std::vector<double> losses;  // per step, in order
  int64_t trips = 0;
  double window_s = 0;      // wall seconds of the window
  double compute_s = 0;     // pure compute per step (all micro-batches)
  double wait_s = 0;        // waiting per step
  double step_s = 0;        // wall time per step
  double staleness = 0;     // mean staleness of its pushes (async / SSP)
  int64_t noise_steps = 0;  // steps that measured the gradient noise (accumulation > 1)
  NoiseEstimate noise;      // their mean
  // Per step, in order (empty where unknown): compute seconds and the own accumulation.
  std::vector<double> step_compute_s;
  std::vector<int64_t> step_alpha;
};

struct LossStats {
  double initial = 0, minimum = 0, maximum = 0, last = 0, max_change = 0;
};
LossStats SummariseLosses(const std::vector<double>& losses);

// The new alpha after `action` (halve / keep / double), clamped to [lo, hi].
int64_t ApplyAction(int64_t alpha, int action, int64_t lo, int64_t hi);
const char* ActionName(int action);

// What the environment knows of the whole job when a worker's window arrives.
struct JobView {
  double relative_compute = 1;  // this worker's compute per micro-batch over the workers' mean
  double relative_step = 1;     // its compute per step over the slowest worker's
  double batch_over_noise = 0;  // M / B_noise; 0: the noise is not known
};

// The job scope's view of its split (relative_compute, relative_step; no noise): `seconds` per
// micro-batch and `micro_batches` per step of each slice.
JobView SplitView(const std::vector<double>& seconds, const std::vector<double>& micro_batches);

class ObservationBuilder {
 public:
  ObservationBuilder(int64_t alpha_min, int64_t alpha_max)
      : alpha_min_(alpha_min), alpha_max_(alpha_max) {}
  std::vector<float> Build(const WindowReport& r, const JobView& job);

 private:
  int64_t alpha_min_, alpha_max_;
  std::array<RunningStat, 5> loss_norm_;
};

}  // namespace tteps::ppo
