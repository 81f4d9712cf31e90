#include "worker/multi_tensor_optimizer.h"

#include <cmath>

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
  torch::NoGradGuard no_grad;
  auto& group = param_groups().front();
  const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
  const auto& params = group.params();
  std::vector<torch::Tensor> p, grads, avg, avg_sq;
  std::vector<at::Scalar> sqrt_bc2, step_size;
  const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
  for (size_t i : WithGradients(params)) {
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = torch::zeros_like(params[i], at::MemoryFormat::Preserve);
      exp_avg_sq_[i] = torch::zeros_like(params[i], at::MemoryFormat::Preserve);
    }
    const int64_t s = ++steps_[i];
    p.push_back(params[i]);
    grads.push_back(params[i].grad());
    avg.push_back(exp_avg_[i]);
    avg_sq.push_back(exp_avg_sq_[i]);
    // As torch::optim::Adam: denom = sqrt(v) / sqrt(1 - beta2^t) + eps, step lr / (1 - beta1^t).
    sqrt_bc2.emplace_back(std::sqrt(1 - std::pow(beta2, s)));
    step_size.emplace_back(-options.lr() / (1 - std::pow(beta1, s)));
  }
  if (p.empty()) return loss;
  at::_foreach_mul_(avg, beta1);
  at::_foreach_add_(avg, grads, 1 - beta1);
  at::_foreach_mul_(avg_sq, beta2);
  at::_foreach_addcmul_(avg_sq, grads, grads, 1 - beta2);
  auto denom = at::_foreach_sqrt(avg_sq);
  at::_foreach_div_(denom, sqrt_bc2);
  at::_foreach_add_(denom, options.eps());
  at::_foreach_addcdiv_(p, avg, denom, step_size);
  return loss;
}

MultiTensorSGD::MultiTensorSGD(std::vector<torch::Tensor> params, torch::optim::SGDOptions options)
    : torch::optim::SGD(std::move(params), options) {
  TORCH_CHECK(options.weight_decay() == 0 && options.dampening() == 0 && !options.nesterov(),
              "MultiTensorSGD: weight decay, dampening and Nesterov are not supported");
  momentum_.resize(param_groups().front().params().size());
}

torch::Tensor MultiTensorSGD::step(LossClosure closure) {
  const torch::Tensor loss = LossOf(closure);
  torch::NoGradGuard no_grad;
  auto& group = param_groups().front();
  const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
  const auto& params = group.params();
  std::vector<torch::Tensor> p, grads;
  for (size_t i : WithGradients(params)) {
    p.push_back(params[i]);
    grads.push_back(params[i].grad());
  }
  if (p.empty()) return loss;
  if (options.momentum() == 0) {
    at::_foreach_add_(p, grads, -options.lr());
    return loss;
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
  return loss;
}

}  // namespace tteps
