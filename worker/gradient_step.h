// The compute part of one step: forward and backward over some trips, gradients accumulated.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "common/gradient_noise.h"
#include "common/job_config.h"
#include "model/data/trips.h"
#include "model/deeptte/deeptte.h"

namespace tteps {

struct MicroBatchStats {
  double loss_sum = 0;  // sum over trips of the per-trip loss
  int64_t trips = 0;
};

// Adds the gradient of the SUM of per-trip losses over `indices` to the parameters' .grad.
// Summing (not averaging) lets micro-batches and workers be combined by sample count:
// dividing the total by the total trip count gives the gradient of the union batch.
// On the CPU a batch of more than kCpuChunkTrips runs its forward in chunks of that many, then
// one backward (the same gradient, summed in another order): one chunk's activations stay in
// the caches where a whole batch of 1,024 trips' did not (72 MB of LSTM gates; trips/s fell by a
// fifth from 256 to 1,024).
MicroBatchStats AccumulateGradients(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                                    const std::vector<size_t>& indices);
constexpr size_t kCpuChunkTrips = 256;

// AccumulateGradients with chunks of at most `chunk` trips, on any device.
MicroBatchStats AccumulateInChunks(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                                   const std::vector<size_t>& indices, size_t chunk);

// The name of the first parameter whose gradient holds a NaN or infinity; empty if none does.
std::string NonFiniteGradient(torch::nn::Module& model);

// The squared norm of all parameter gradients together (for the gradient noise estimate).
double GradientSquaredNorm(torch::nn::Module& model);

// Adds the gradient of `indices` like AccumulateGradients and the squared norm of that gradient
// alone (what it added to the gradients) to `noise`: a piece of the step (--lr_scaling
// adascale, common/gradient_noise.h).
MicroBatchStats AccumulateMeasured(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                                   const std::vector<size_t>& indices, PieceNoise* noise);

// Multiplies every parameter gradient by `factor` (1 / count turns a sum into a mean).
void ScaleGradients(torch::nn::Module& model, double factor);

// ScaleGradients(model, factor), then optimizer.step(): with the same result, in one pass over
// each gradient where the optimizer is ours (StepsOnScaledGradients), which leaves the gradients
// unscaled on the CPU; `model` holds the optimizer's parameters.
void StepOnScaledGradients(torch::optim::Optimizer& optimizer, torch::nn::Module& model,
                           double factor);

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const OptimizerConfig& opts,
                                                       std::vector<torch::Tensor> params);

}  // namespace tteps
