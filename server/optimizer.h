// Optimizers applied on the parameter server to plain float spans (no LibTorch). Their arithmetic
// reproduces torch::optim (LibTorch 1.13) op by op, rounding included, so that a server step
// equals the worker-side step of `local` mode: on the same CPU the results are bit-identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/job_config.h"  // OptimizerConfig

namespace tteps {
namespace server {

// Applies one update to a contiguous span of parameters. Owns its per-element state for exactly
// the n elements it was created for (one instance per server shard). Not thread-safe.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // The gradient is grad[i] * grad_scale, rounded to float: the server passes a sample-weighted
  // sum with scale 1 / samples, so averaging costs no pass of its own (and gives the bits of
  // the local trainer's g * (1 / n)). Both spans hold size() floats and must not overlap.
  virtual void Step(float* params, const float* grad, float grad_scale) = 0;
  void Step(float* params, const float* grad) { Step(params, grad, 1.0f); }
  virtual size_t size() const = 0;
  virtual int64_t steps() const = 0;
  // For checkpoints: the state as named float buffers ("exp_avg" and "exp_avg_sq" for adam,
  // "momentum_buffer" for momentum, none for sgd), each of size() floats, plus steps(). Restore
  // checks names and sizes (and steps >= 0) and throws std::invalid_argument on a mismatch,
  // leaving the optimizer unchanged.
  virtual std::vector<std::pair<std::string, std::vector<float>>> State() const = 0;
  virtual void Restore(const std::vector<std::pair<std::string, std::vector<float>>>& state,
                       int64_t steps) = 0;
  // The next Step() uses the new rate (for schedules). Throws std::invalid_argument unless lr is
  // finite and >= 0 (0 is allowed here, e.g. for warm-up, unlike in OptimizerConfig).
  void set_lr(double lr);
  double lr() const { return lr_; }

 protected:
  explicit Optimizer(double lr) : lr_(lr) {}

 private:
  double lr_;
};

// Validates the config (std::invalid_argument naming the field, or the unknown name) and makes
// the optimizer for n parameters.
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config, size_t n);

// Scales a gradient in place by max_norm / (global_norm + 1e-6) when that is below 1, as
// torch::nn::utils::clip_grad_norm_ does; global_norm is computed elsewhere (across shards).
// No-op if max_norm <= 0 or global_norm is NaN.
void ClipByGlobalNorm(float* grad, size_t n, double global_norm, double max_norm);

}  // namespace server
}  // namespace tteps
