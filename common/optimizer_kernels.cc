#include "common/optimizer_kernels.h"

#include <cmath>

namespace tteps::optimizer_kernels {
namespace {

// LibTorch 1.13 picks its elementwise kernels by CPU at run time. With AVX2 and FMA
// (its AVX2 and AVX512 kernels) `a.add_(b, alpha)` is fma(b, alpha, a) and addcmul's
// `a + s * b * c` is compiled to fma(s * b, c, a); its DEFAULT kernels round every operation.
// The kernels below make the same choice (kFused) and round every other operation exactly as
// torch does (this file is built with -ffp-contract=off, so the compiler fuses nothing else),
// which gives torch's bits. They run on the raw spans: no per-element virtual call, and the
// loops vectorise (sqrt too: the file is built with -fno-math-errno, like LibTorch).

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define TTEPS_FMA_DISPATCH 1
#else
#define TTEPS_FMA_DISPATCH 0
#endif

#if defined(__GNUC__)
#define TTEPS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TTEPS_ALWAYS_INLINE inline
#endif

// a * b + c, rounded once (kFused) or twice.
template <bool kFused>
TTEPS_ALWAYS_INLINE float MulAdd(float a, float b, float c) {
  if constexpr (kFused) {
    return __builtin_fmaf(a, b, c);
  } else {
    return a * b + c;
  }
}

// torch SGD without momentum: p.add_(grad, -lr).
template <bool kFused>
struct SgdKernel {
  static TTEPS_ALWAYS_INLINE void Run(size_t n, float neg_lr, float* __restrict p,
                                      const float* __restrict g, float scale) {
    for (size_t i = 0; i < n; ++i) p[i] = MulAdd<kFused>(g[i] * scale, neg_lr, p[i]);
  }
};

// torch SGD with momentum after its first step: buf.mul_(momentum).add_(grad, 1) (adding 1 * g
// is exact, fused or not), then p.add_(buf, -lr).
template <bool kFused>
struct MomentumKernel {
  static TTEPS_ALWAYS_INLINE void Run(size_t n, float momentum, float neg_lr, float* __restrict p,
                                      const float* __restrict g, float scale,
                                      float* __restrict buf) {
    for (size_t i = 0; i < n; ++i) {
      const float b = buf[i] * momentum + g[i] * scale;
      buf[i] = b;
      p[i] = MulAdd<kFused>(b, neg_lr, p[i]);
    }
  }
};

// torch Adam: exp_avg.mul_(beta1).add_(g, 1 - beta1);
// exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);
// denom = (exp_avg_sq.sqrt() / sqrt(bias_correction2)).add_(eps);
// p.addcdiv_(exp_avg, denom, -step_size), which computes p + (-step_size * exp_avg) / denom.
template <bool kFused>
struct AdamKernel {
  static TTEPS_ALWAYS_INLINE void Run(size_t n, const AdamScalars& s, float* __restrict p,
                                      const float* __restrict g, float scale,
                                      float* __restrict exp_avg, float* __restrict exp_avg_sq) {
    const float beta1 = s.beta1, one_minus_beta1 = s.one_minus_beta1;
    const float beta2 = s.beta2, one_minus_beta2 = s.one_minus_beta2;
    const float sqrt_bc2 = s.sqrt_bias_correction2, eps = s.eps, neg_step = s.neg_step_size;
    for (size_t i = 0; i < n; ++i) {
      const float gi = g[i] * scale;
      const float m = MulAdd<kFused>(gi, one_minus_beta1, exp_avg[i] * beta1);
      const float v = MulAdd<kFused>(one_minus_beta2 * gi, gi, exp_avg_sq[i] * beta2);
      exp_avg[i] = m;
      exp_avg_sq[i] = v;
      const float denom = std::sqrt(v) / sqrt_bc2 + eps;
      p[i] = p[i] + neg_step * m / denom;
    }
  }
};

#if TTEPS_FMA_DISPATCH
// Whether LibTorch would run its AVX2 (or AVX512) kernels on this CPU: it requires AVX2 and FMA.
bool UseFusedKernels() {
  static const bool fused = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return fused;
}

// Compiled for AVX2+FMA whatever the build's baseline, so MulAdd<true> is one instruction.
template <template <bool> class Kernel, typename... Args>
__attribute__((target("avx2,fma"))) void RunFused(Args... args) {
  Kernel<true>::Run(args...);
}
#endif

template <template <bool> class Kernel, typename... Args>
void Run(Args... args) {
#if TTEPS_FMA_DISPATCH
  if (UseFusedKernels()) return RunFused<Kernel>(args...);
#endif
  Kernel<false>::Run(args...);
}

}  // namespace

void Sgd(size_t n, float neg_lr, float* p, const float* g, float scale) {
  Run<SgdKernel>(n, neg_lr, p, g, scale);
}

void Momentum(size_t n, float momentum, float neg_lr, float* p, const float* g, float scale,
              float* buf) {
  Run<MomentumKernel>(n, momentum, neg_lr, p, g, scale, buf);
}

AdamScalars AdamStepScalars(double beta1, double beta2, double eps, double lr, int64_t step) {
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  AdamScalars s;
  s.beta1 = static_cast<float>(beta1);
  s.one_minus_beta1 = static_cast<float>(1 - beta1);
  s.beta2 = static_cast<float>(beta2);
  s.one_minus_beta2 = static_cast<float>(1 - beta2);
  s.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2));
  s.eps = static_cast<float>(eps);
  s.neg_step_size = static_cast<float>(-(lr / bias_correction1));
  return s;
}

void Adam(size_t n, const AdamScalars& s, float* p, const float* g, float scale, float* exp_avg,
          float* exp_avg_sq) {
  Run<AdamKernel>(n, s, p, g, scale, exp_avg, exp_avg_sq);
}

}  // namespace tteps::optimizer_kernels
