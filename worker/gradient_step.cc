#include "worker/gradient_step.h"

#include "worker/data/padded_batch.h"

namespace tteps {

MicroBatchStats AccumulateGradients(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                                    const std::vector<size_t>& indices) {
  MicroBatchStats s;
  if (indices.empty()) return s;
  model.train();
  auto batch = deeptte::ToTensors(data::MakeBatch(trips, indices, model.stats()), torch::kFloat,
                                  model.device());
  auto loss = model.Loss(batch).total;
  s.trips = batch.size();
  (loss * static_cast<double>(s.trips)).backward();
  s.loss_sum = loss.item<double>() * s.trips;
  return s;
}

std::string NonFiniteGradient(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  // One reduction and one read of the result per step (a single device sync on a GPU); the
  // parameter is looked for only when something is wrong.
  torch::Tensor all_finite;
  for (const auto& p : model.parameters()) {
    if (!p.grad().defined()) continue;
    const auto finite = torch::isfinite(p.grad()).all();
    all_finite = all_finite.defined() ? all_finite.logical_and(finite) : finite;
  }
  if (!all_finite.defined() || all_finite.item<bool>()) return "";
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
  for (auto& p : model.parameters()) {
    if (p.grad().defined()) p.mutable_grad().mul_(factor);
  }
}

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const OptimizerConfig& opts,
                                                       std::vector<torch::Tensor> params) {
  if (opts.name == "adam") {
    return std::make_unique<torch::optim::Adam>(std::move(params),
                                                torch::optim::AdamOptions(opts.lr)
                                                    .betas(std::make_tuple(opts.beta1, opts.beta2))
                                                    .eps(opts.eps));
  }
  const double momentum = opts.name == "momentum" ? opts.momentum : 0.0;
  return std::make_unique<torch::optim::SGD>(std::move(params),
                                             torch::optim::SGDOptions(opts.lr).momentum(momentum));
}

}  // namespace tteps
