#include "worker/gradient_step.h"

#include <algorithm>

#include "model/data/padded_batch.h"
#include "worker/multi_tensor_optimizer.h"

namespace tteps {

MicroBatchStats AccumulateInChunks(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                                   const std::vector<size_t>& indices, size_t chunk) {
  MicroBatchStats s;
  if (indices.empty()) return s;
  chunk = std::max<size_t>(chunk, 1);
  model.train();
  // Each chunk's forward, then one backward through all of them: each parameter's gradient
  // arrives once (the gradient hooks of an overlapped push see the whole of it), and the
  // backward still runs chunk by chunk (the engine takes the latest nodes first).
  torch::Tensor total;
  std::vector<std::pair<torch::Tensor, int64_t>> losses;  // each chunk's mean loss and trips
  for (size_t at = 0; at < indices.size(); at += chunk) {
    const auto from = indices.begin() + at;
    const std::vector<size_t> part(from, from + std::min(chunk, indices.size() - at));
    auto batch =
        deeptte::ToTensors(data::MakeBatch(trips, part, model.stats(), model.pad_multiple()),
                           torch::kFloat, model.device());
    const auto n = static_cast<int64_t>(batch.size());
    const auto loss = model.Loss(batch).total;
    const auto sum = loss * static_cast<double>(n);
    total = total.defined() ? total + sum : sum;
    losses.emplace_back(loss.detach(), n);
    s.trips += n;
  }
  total.backward();
  for (const auto& [loss, n] : losses) s.loss_sum += loss.item<double>() * n;
  return s;
}

MicroBatchStats AccumulateGradients(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                                    const std::vector<size_t>& indices) {
  const bool cpu = model.device().is_cpu();
  return AccumulateInChunks(model, trips, indices, cpu ? kCpuChunkTrips : indices.size());
}

namespace {

// The parameters' gradients that exist (the multi-tensor kernels take defined tensors only).
std::vector<torch::Tensor> DefinedGradients(torch::nn::Module& model) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : model.parameters()) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

}  // namespace

std::string NonFiniteGradient(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  // One multi-tensor norm, one reduction and one read of the result per step (a single device
  // sync on a GPU): a NaN or infinity makes its tensor's norm non-finite. A finite gradient so
  // large that its norm overflows only costs the per-parameter search, which finds nothing.
  const std::vector<torch::Tensor> grads = DefinedGradients(model);
  if (grads.empty() || torch::stack(at::_foreach_norm(grads)).isfinite().all().item<bool>()) {
    return "";
  }
  for (const auto& p : model.named_parameters()) {
    const auto& g = p.value().grad();
    if (g.defined() && !torch::isfinite(g).all().item<bool>()) return p.key();
  }
  return "";
}

namespace {

// The squared norm of the defined tensors together, in double; one device sync per call.
double SquaredNormOf(const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  torch::Tensor total;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    const auto sq = t.to(torch::kDouble).square().sum();
    total = total.defined() ? total + sq : sq;
  }
  return total.defined() ? total.item<double>() : 0.0;
}

}  // namespace

double GradientSquaredNorm(torch::nn::Module& model) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : model.parameters()) grads.push_back(p.grad());
  return SquaredNormOf(grads);
}

MicroBatchStats AccumulateMeasured(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                                   const std::vector<size_t>& indices, PieceNoise* noise) {
  // The gradients before, to subtract: the piece's own gradient is what backward adds.
  std::vector<torch::Tensor> before;
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : model.parameters()) {
      before.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    }
  }
  const MicroBatchStats s = AccumulateGradients(model, trips, indices);
  std::vector<torch::Tensor> pieces;
  {
    torch::NoGradGuard no_grad;
    size_t i = 0;
    for (const auto& p : model.parameters()) {
      const torch::Tensor& b = before[i++];
      pieces.push_back(p.grad().defined() && b.defined() ? p.grad() - b : p.grad());
    }
  }
  noise->Add(SquaredNormOf(pieces), s.trips);
  return s;
}

void ScaleGradients(torch::nn::Module& model, double factor) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads = DefinedGradients(model);
  if (grads.empty()) return;
  if (!grads.front().is_cuda()) {
    // On the CPU one pass per tensor (the per-tensor mul_ costs an operator and a scalar
    // tensor each); the same float product mul_ computes.
    const float f = static_cast<float>(factor);
    for (auto& g : grads) {
      if (g.scalar_type() != torch::kFloat || !g.is_contiguous()) {
        g.mul_(factor);
        continue;
      }
      float* p = g.data_ptr<float>();
      for (int64_t i = 0, n = g.numel(); i < n; ++i) p[i] *= f;
    }
    return;
  }
  at::_foreach_mul_(grads, factor);  // one multi-tensor kernel on a GPU
}

void StepOnScaledGradients(torch::optim::Optimizer& optimizer, torch::nn::Module& model,
                           double factor) {
  if (auto* ours = dynamic_cast<StepsOnScaledGradients*>(&optimizer)) {
    ours->StepScaled(factor);
    return;
  }
  ScaleGradients(model, factor);
  optimizer.step();
}

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const OptimizerConfig& opts,
                                                       std::vector<torch::Tensor> params) {
  // A step of per-tensor kernels is mostly launch overhead on a GPU, and passes over memory on
  // the CPU: these do the same arithmetic in a few launches or one pass per tensor.
  if (opts.name == "adam") {
    const auto options = torch::optim::AdamOptions(opts.lr)
                             .betas(std::make_tuple(opts.beta1, opts.beta2))
                             .eps(opts.eps);
    return std::make_unique<MultiTensorAdam>(std::move(params), options);
  }
  const double momentum = opts.name == "momentum" ? opts.momentum : 0.0;
  const auto options = torch::optim::SGDOptions(opts.lr).momentum(momentum);
  return std::make_unique<MultiTensorSGD>(std::move(params), options);
}

}  // namespace tteps
