// --accumulation_policy goodput, after Pollux (OSDI 2021): the global batch that maximises
// goodput, throughput x statistical efficiency, split across the workers as `speed` splits it.
// The efficiency of a batch of M trips relative to the job's starting batch M0 is
// (B_noise + M0) / (B_noise + M) where the learning rate scales with the batch, and
// sqrt(M0 (M0 + B_noise) / (M (M + B_noise))) for Adam at a fixed rate (StepModel,
// common/gradient_noise.h), with B_noise the gradient noise scale the workers measure.
// Torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/gradient_noise.h"
#include "scheduler/accumulation_policy.h"

namespace tteps::scheduler {

// What the policy knows of the job, as measured.
struct GoodputModel {
  std::vector<double> seconds;  // per worker: compute seconds per micro-batch
  std::vector<double> trips;    // per worker: trips per micro-batch
  double overhead_s = 0;        // per step, beyond the slowest worker's compute
  double noise_scale = 0;       // B_noise in trips
  double base_batch = 0;        // M0: the starting global batch in trips
  StepModel step_model = StepModel::kScaledLr;
  // After a loss: per worker, the micro-batches of orphaned slices it computes besides its own
  // (empty: none); and the trips per step of those slices, which no decision changes.
  std::vector<double> extra;
  double fixed_trips = 0;
};

// Trips per second of progress (as if at the base batch) of the split `alpha`.
double Goodput(const GoodputModel& m, const std::vector<int64_t>& alpha);
// The split of highest goodput among the speed splits (SpeedShares) of every total in
// [W x lo, W x hi], W the workers of the model.
std::vector<int64_t> BestSplit(const GoodputModel& m, int64_t lo, int64_t hi);

// `accumulation`: every worker's at the start (it sets M0). lo must be >= 2: a worker measures
// the noise from two micro-batches or more. Decisions come once every worker has reported a
// window since the last one with steps at its current accumulation (scheduler/speed_meter.h)
// and the noise has been measured over 8 steps, and only
// where they raise the predicted goodput by more than 5%. After a loss the orphaned slices keep
// their accumulation (and count in the batch) and the others are split as above.
std::unique_ptr<AccumulationPolicy> MakeGoodputPolicy(int workers, int64_t accumulation, int64_t lo,
                                                      int64_t hi, StepModel step_model);

}  // namespace tteps::scheduler
