#include "server/optimizer.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

namespace tteps {
namespace server {
namespace {

using StateBuffers = std::vector<std::pair<std::string, std::vector<float>>>;

// ---------------------------------------------------------------------------------------------
// Kernels. LibTorch 1.13 picks its elementwise kernels by CPU at run time. With AVX2 and FMA
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

// The float scalars of one Adam step (torch casts its double scalars to the tensor's dtype).
struct AdamScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bias_correction2, eps, neg_step_size;
};

// torch Adam: exp_avg.mul_(beta1).add_(g, 1 - beta1);
// exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);
// denom = (exp_avg_sq.sqrt() / sqrt(bias_correction2)).add_(eps);
// p.addcdiv_(exp_avg, denom, -step_size), which computes p + (-step_size * exp_avg) / denom.
template <bool kFused>
struct AdamKernel {
  static TTEPS_ALWAYS_INLINE void Run(size_t n, AdamScalars s, float* __restrict p,
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

// ---------------------------------------------------------------------------------------------

template <typename T>
std::string Str(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

[[noreturn]] void Fail(const std::string& what) { throw std::invalid_argument(what); }

// Checks that `state` holds exactly the buffers `names` (in any order), each of n floats, and
// that steps >= 0. Returns the buffers in the order of `names`.
std::vector<const std::vector<float>*> CheckState(const char* optimizer, const StateBuffers& state,
                                                  int64_t steps, size_t n,
                                                  std::initializer_list<const char*> names) {
  const std::string where = std::string(optimizer) + " optimizer Restore: ";
  if (steps < 0) Fail(where + "steps must be >= 0, got " + Str(steps));
  std::vector<const std::vector<float>*> out;
  for (const char* name : names) {
    const std::vector<float>* found = nullptr;
    for (const auto& [key, buffer] : state) {
      if (key != name) continue;
      if (found) Fail(where + "buffer '" + name + "' given twice");
      found = &buffer;
    }
    if (!found) Fail(where + "missing buffer '" + name + "'");
    if (found->size() != n) {
      Fail(where + "buffer '" + name + "' has " + Str(found->size()) + " floats, expected " +
           Str(n));
    }
    out.push_back(found);
  }
  for (const auto& entry : state) {
    const std::string& key = entry.first;
    if (std::none_of(names.begin(), names.end(), [&](const char* name) { return key == name; })) {
      Fail(where + "unexpected buffer '" + key + "'");
    }
  }
  return out;
}

class Sgd final : public Optimizer {
 public:
  Sgd(double lr, size_t n) : Optimizer(lr), n_(n) {}

  void Step(float* params, const float* grad, float scale) override {
    Run<SgdKernel>(n_, static_cast<float>(-lr()), params, grad, scale);
    ++steps_;
  }
  size_t size() const override { return n_; }
  int64_t steps() const override { return steps_; }
  StateBuffers State() const override { return {}; }
  void Restore(const StateBuffers& state, int64_t steps) override {
    CheckState("sgd", state, steps, n_, {});
    steps_ = steps;
  }

 private:
  size_t n_;
  int64_t steps_ = 0;
};

class Momentum final : public Optimizer {
 public:
  Momentum(double lr, double momentum, size_t n)
      : Optimizer(lr), momentum_(momentum), buffer_(n, 0.0f) {}

  void Step(float* params, const float* grad, float scale) override {
    const size_t n = buffer_.size();
    const float neg_lr = static_cast<float>(-lr());
    if (steps_ == 0) {
      // torch's first step starts the buffer as a copy of the gradient.
      for (size_t i = 0; i < n; ++i) buffer_[i] = grad[i] * scale;
      Run<SgdKernel>(n, neg_lr, params, static_cast<const float*>(buffer_.data()), 1.0f);
    } else {
      Run<MomentumKernel>(n, static_cast<float>(momentum_), neg_lr, params, grad, scale,
                          buffer_.data());
    }
    ++steps_;
  }
  size_t size() const override { return buffer_.size(); }
  int64_t steps() const override { return steps_; }
  StateBuffers State() const override { return {{"momentum_buffer", buffer_}}; }
  void Restore(const StateBuffers& state, int64_t steps) override {
    auto buffers = CheckState("momentum", state, steps, buffer_.size(), {"momentum_buffer"});
    buffer_ = *buffers[0];
    steps_ = steps;
  }

 private:
  double momentum_;
  std::vector<float> buffer_;  // unused (and all zero) until the first step
  int64_t steps_ = 0;
};

class Adam final : public Optimizer {
 public:
  Adam(const OptimizerConfig& c, size_t n)
      : Optimizer(c.lr),
        beta1_(c.beta1),
        beta2_(c.beta2),
        eps_(c.eps),
        exp_avg_(n, 0.0f),
        exp_avg_sq_(n, 0.0f) {}

  void Step(float* params, const float* grad, float scale) override {
    ++steps_;
    // The scalars in double, as torch computes them, then cast to float.
    const double bias_correction1 = 1 - std::pow(beta1_, static_cast<double>(steps_));
    const double bias_correction2 = 1 - std::pow(beta2_, static_cast<double>(steps_));
    AdamScalars s;
    s.beta1 = static_cast<float>(beta1_);
    s.one_minus_beta1 = static_cast<float>(1 - beta1_);
    s.beta2 = static_cast<float>(beta2_);
    s.one_minus_beta2 = static_cast<float>(1 - beta2_);
    s.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2));
    s.eps = static_cast<float>(eps_);
    s.neg_step_size = static_cast<float>(-(lr() / bias_correction1));
    Run<AdamKernel>(exp_avg_.size(), s, params, grad, scale, exp_avg_.data(), exp_avg_sq_.data());
  }
  size_t size() const override { return exp_avg_.size(); }
  int64_t steps() const override { return steps_; }
  StateBuffers State() const override {
    return {{"exp_avg", exp_avg_}, {"exp_avg_sq", exp_avg_sq_}};
  }
  void Restore(const StateBuffers& state, int64_t steps) override {
    auto buffers = CheckState("adam", state, steps, exp_avg_.size(), {"exp_avg", "exp_avg_sq"});
    exp_avg_ = *buffers[0];
    exp_avg_sq_ = *buffers[1];
    steps_ = steps;
  }

 private:
  double beta1_, beta2_, eps_;
  std::vector<float> exp_avg_, exp_avg_sq_;
  int64_t steps_ = 0;
};

}  // namespace

void Optimizer::set_lr(double lr) {
  if (!(std::isfinite(lr) && lr >= 0))
    Fail("learning rate must be finite and >= 0, got " + Str(lr));
  lr_ = lr;
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config, size_t n) {
  config.Validate();
  if (config.name == "sgd") return std::make_unique<Sgd>(config.lr, n);
  if (config.name == "momentum") return std::make_unique<Momentum>(config.lr, config.momentum, n);
  return std::make_unique<Adam>(config, n);  // Validate() admits only the three names
}

void ClipByGlobalNorm(float* grad, size_t n, double global_norm, double max_norm) {
  // As torch::nn::utils::clip_grad_norm_: coefficient max_norm / (norm + 1e-6), applied when
  // below 1. The negated comparisons also make a NaN norm a no-op.
  if (!(max_norm > 0)) return;
  const double coef = max_norm / (global_norm + 1e-6);
  if (!(coef < 1.0)) return;
  const float scale = static_cast<float>(coef);
  for (size_t i = 0; i < n; ++i) grad[i] *= scale;
}

}  // namespace server
}  // namespace tteps
