#include "server/optimizer.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

#include "common/optimizer_kernels.h"

namespace tteps {
namespace server {
namespace {

using StateBuffers = std::vector<std::pair<std::string, std::vector<float>>>;

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
    optimizer_kernels::Sgd(n_, static_cast<float>(-lr()), params, grad, scale);
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
      optimizer_kernels::Sgd(n, neg_lr, params, buffer_.data(), 1.0f);
    } else {
      optimizer_kernels::Momentum(n, static_cast<float>(momentum_), neg_lr, params, grad, scale,
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
    const auto s = optimizer_kernels::AdamStepScalars(beta1_, beta2_, eps_, lr(), steps_);
    optimizer_kernels::Adam(exp_avg_.size(), s, params, grad, scale, exp_avg_.data(),
                            exp_avg_sq_.data());
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
