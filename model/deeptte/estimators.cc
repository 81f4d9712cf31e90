#include "model/deeptte/estimators.h"

#include "model/deeptte/fused_mlp.h"

namespace tteps::deeptte {
namespace {

bool Fusable(const torch::Tensor& x) {
  return x.device().is_cpu() && x.scalar_type() == torch::kFloat && x.dim() == 2;
}

MlpLayer Layer(const torch::nn::LinearImpl& linear, bool leaky, bool residual) {
  return {linear.weight, linear.bias, leaky, residual};
}

}  // namespace

EntireEstimatorImpl::EntireEstimatorImpl(int64_t input_size, int64_t num_residual, int64_t width) {
  input2hid_ = register_module("input2hid", torch::nn::Linear(input_size, width));
  residuals_ = register_module("residuals", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_residual; ++i) residuals_->push_back(torch::nn::Linear(width, width));
  hid2out_ = register_module("hid2out", torch::nn::Linear(width, 1));
}

torch::Tensor EntireEstimatorImpl::forward(const torch::Tensor& x) {
  if (fused_cpu_ && Fusable(x)) {
    std::vector<MlpLayer> layers = {Layer(*input2hid_, true, false)};
    for (auto& layer : *residuals_) {
      layers.push_back(Layer(*layer->as<torch::nn::Linear>(), true, true));
    }
    layers.push_back(Layer(*hid2out_, false, false));
    return FusedMlp(x, layers).squeeze(1);
  }
  auto hidden = torch::leaky_relu(input2hid_(x));
  for (auto& layer : *residuals_) {
    hidden = hidden + torch::leaky_relu(layer->as<torch::nn::Linear>()->forward(hidden));
  }
  return hid2out_(hidden).squeeze(1);  // squeeze the feature dim only: safe at batch size 1
}

LocalEstimatorImpl::LocalEstimatorImpl(int64_t input_size) {
  input2hid_ = register_module("input2hid", torch::nn::Linear(input_size, 64));
  hid2hid_ = register_module("hid2hid", torch::nn::Linear(64, 32));
  hid2out_ = register_module("hid2out", torch::nn::Linear(32, 1));
}

torch::Tensor LocalEstimatorImpl::forward(const torch::Tensor& x) {
  if (fused_cpu_ && Fusable(x)) {
    return FusedMlp(x, {Layer(*input2hid_, true, false), Layer(*hid2hid_, true, false),
                        Layer(*hid2out_, false, false)})
        .squeeze(-1);
  }
  auto hidden = torch::leaky_relu(input2hid_(x));
  hidden = torch::leaky_relu(hid2hid_(hidden));
  return hid2out_(hidden).squeeze(-1);
}

}  // namespace tteps::deeptte
