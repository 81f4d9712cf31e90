#include "worker/multi_tensor_optimizer.h"

#include <cmath>

#include "common/optimizer_kernels.h"

namespace tteps {
namespace {

// The parameters of the (only) group that have a gradient this step, by index.
std::vector<size_t> WithGradients(const std::vector<torch::Tensor>& params) {
  std::vector<size_t> at;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].grad().defined()) at.push_back(i);
  }
  return at;
}

// The closure's loss, computed with gradients on as LibTorch's optimizers do; none without one.
torch::Tensor LossOf(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

// On the CPU, whether every parameter is a contiguous float tensor (the one-pass kernels' case).
bool OnCpuInFloat(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params) {
    if (!p.device().is_cpu() || p.scalar_type() != torch::kFloat || !p.is_contiguous()) {
      return false;
    }
  }
  return true;
}

float* Floats(const torch::Tensor& t) { return t.data_ptr<float>(); }

// The foreach paths' scaling: the gradients multiplied in place, as ScaleGradients does on a GPU.
void ScaleInPlace(std::vector<torch::Tensor>& grads, double scale) {
  if (scale != 1) at::_foreach_mul_(grads, scale);
}

}  // namespace

MultiTensorAdam::MultiTensorAdam(std::vector<torch::Tensor> params,
                                 torch::optim::AdamOptions options)
    : torch::optim::Adam(std::move(params), options) {
  TORCH_CHECK(options.weight_decay() == 0 && !options.amsgrad(),
              "MultiTensorAdam: weight decay and AMSGrad are not supported");
  const size_t n = param_groups().front().params().size();
  exp_avg_.resize(n);
  exp_avg_sq_.resize(n);
  steps_.assign(n, 0);
}

torch::Tensor MultiTensorAdam::step(LossClosure closure) {
  const torch::Tensor loss = LossOf(closure);
  Step(1);
  return loss;
}

void MultiTensorAdam::StepScaled(double factor) { Step(factor); }

void MultiTensorAdam::Step(double scale) {
  torch::NoGradGuard no_grad;
  auto& group = param_groups().front();
  const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
  const auto& params = group.params();
  std::vector<torch::Tensor> p, grads, avg, avg_sq;
  std::vector<at::Scalar> sqrt_bc2, step_size;
  const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
  const bool one_pass = OnCpuInFloat(params);
  for (size_t i : WithGradients(params)) {
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = torch::zeros_like(params[i], at::MemoryFormat::Contiguous);
      exp_avg_sq_[i] = torch::zeros_like(params[i], at::MemoryFormat::Contiguous);
    }
    const int64_t s = ++steps_[i];
    if (one_pass) {
      const auto scalars =
          optimizer_kernels::AdamStepScalars(beta1, beta2, options.eps(), options.lr(), s);
      const auto g = params[i].grad().contiguous();
      optimizer_kernels::Adam(params[i].numel(), scalars, Floats(params[i]), Floats(g),
                              static_cast<float>(scale), Floats(exp_avg_[i]),
                              Floats(exp_avg_sq_[i]));
      continue;
    }
    p.push_back(params[i]);
    grads.push_back(params[i].grad());
    avg.push_back(exp_avg_[i]);
    avg_sq.push_back(exp_avg_sq_[i]);
    // As torch::optim::Adam: denom = sqrt(v) / sqrt(1 - beta2^t) + eps, step lr / (1 - beta1^t).
    sqrt_bc2.emplace_back(std::sqrt(1 - std::pow(beta2, s)));
    step_size.emplace_back(-options.lr() / (1 - std::pow(beta1, s)));
  }
  if (p.empty()) return;
  ScaleInPlace(grads, scale);
  at::_foreach_mul_(avg, beta1);
  at::_foreach_add_(avg, grads, 1 - beta1);
  at::_foreach_mul_(avg_sq, beta2);
  at::_foreach_addcmul_(avg_sq, grads, grads, 1 - beta2);
  auto denom = at::_foreach_sqrt(avg_sq);
  at::_foreach_div_(denom, sqrt_bc2);
  at::_foreach_add_(denom, options.eps());
  at::_foreach_addcdiv_(p, avg, denom, step_size);
}

MultiTensorSGD::MultiTensorSGD(std::vector<torch::Tensor> params, torch::optim::SGDOptions options)
    : torch::optim::SGD(std::move(params), options) {
  TORCH_CHECK(options.weight_decay() == 0 && options.dampening() == 0 && !options.nesterov(),
              "MultiTensorSGD: weight decay, dampening and Nesterov are not supported");
  momentum_.resize(param_groups().front().params().size());
}

torch::Tensor MultiTensorSGD::step(LossClosure closure) {
  const torch::Tensor loss = LossOf(closure);
  Step(1);
  return loss;
}

void MultiTensorSGD::StepScaled(double factor) { Step(factor); }

void MultiTensorSGD::Step(double scale) {
  torch::NoGradGuard no_grad;
  auto& group = param_groups().front();
  const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
  const auto& params = group.params();
  std::vector<torch::Tensor> p, grads;
  for (size_t i : WithGradients(params)) {
    p.push_back(params[i]);
    grads.push_back(params[i].grad());
  }
  if (p.empty()) return;
  if (OnCpuInFloat(p)) {
    StepOnCpu(options, static_cast<float>(scale));
    return;
  }
  ScaleInPlace(grads, scale);
  if (options.momentum() == 0) {
    at::_foreach_add_(p, grads, -options.lr());
    return;
  }
  // As torch::optim::SGD: the buffer starts as the first gradient, then buf = m buf + grad.
  std::vector<torch::Tensor> step_bufs, bufs, buf_grads;
  for (size_t i : WithGradients(params)) {
    if (!momentum_[i].defined()) {
      momentum_[i] = params[i].grad().clone().detach();
    } else {
      bufs.push_back(momentum_[i]);
      buf_grads.push_back(params[i].grad());
    }
    step_bufs.push_back(momentum_[i]);
  }
  if (!bufs.empty()) {
    at::_foreach_mul_(bufs, options.momentum());
    at::_foreach_add_(bufs, buf_grads, 1 - options.dampening());
  }
  at::_foreach_add_(p, step_bufs, -options.lr());
}

void MultiTensorSGD::StepOnCpu(const torch::optim::SGDOptions& options, float scale) {
  const auto& params = param_groups().front().params();
  const float neg_lr = static_cast<float>(-options.lr());
  for (size_t i : WithGradients(params)) {
    const auto& param = params[i];
    const auto g = param.grad().contiguous();
    const size_t n = param.numel();
    if (options.momentum() == 0) {
      optimizer_kernels::Sgd(n, neg_lr, Floats(param), Floats(g), scale);
    } else if (!momentum_[i].defined()) {
      // As torch::optim::SGD: the buffer starts as the first (scaled) gradient.
      momentum_[i] = g.clone(at::MemoryFormat::Contiguous);
      float* m = Floats(momentum_[i]);
      for (size_t j = 0; j < n; ++j) m[j] *= scale;
      optimizer_kernels::Sgd(n, neg_lr, Floats(param), m, 1.0f);
    } else {
      optimizer_kernels::Momentum(n, static_cast<float>(options.momentum()), neg_lr, Floats(param),
                                  Floats(g), scale, Floats(momentum_[i]));
    }
  }
}

}  // namespace tteps
