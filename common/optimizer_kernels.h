// The optimizers' update rules on plain float spans, rounding exactly as LibTorch 1.13's
// torch::optim kernels do on the same CPU (so their results are torch's bits): the parameter
// servers' optimizers (server/optimizer.h) and the worker's CPU optimizer
// (worker/span_optimizer.h) both run these. Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tteps::optimizer_kernels {

// torch SGD without momentum: p.add_(g * scale, -lr).
void Sgd(size_t n, float neg_lr, float* p, const float* g, float scale);

// torch SGD with momentum after its first step: buf = buf * momentum + g * scale, then
// p.add_(buf, -lr).
void Momentum(size_t n, float momentum, float neg_lr, float* p, const float* g, float scale,
              float* buf);

// The float scalars of one Adam step (torch computes them in double and casts to the dtype).
struct AdamScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bias_correction2, eps, neg_step_size;
};
// Those of step `step` (1-based) at rate lr, as torch::optim::Adam computes them.
AdamScalars AdamStepScalars(double beta1, double beta2, double eps, double lr, int64_t step);

// torch Adam on g * scale, updating p and its moments exp_avg and exp_avg_sq.
void Adam(size_t n, const AdamScalars& s, float* p, const float* g, float scale, float* exp_avg,
          float* exp_avg_sq);

}  // namespace tteps::optimizer_kernels
