#include "model/model_params.h"

#include <algorithm>
#include <stdexcept>

namespace tteps {
namespace {

// The module's parameters, checked against the layout (same count, names and sizes).
std::vector<torch::Tensor> Checked(const torch::nn::Module& module, const ParamLayout& layout) {
  auto named = module.named_parameters();
  if (named.size() != layout.entries().size()) {
    throw std::invalid_argument("parameter layout has " + std::to_string(layout.entries().size()) +
                                " tensors, the model " + std::to_string(named.size()));
  }
  std::vector<torch::Tensor> out;
  out.reserve(named.size());
  size_t i = 0;
  for (const auto& p : named) {
    const auto& e = layout.entries()[i++];
    if (p.key() != e.name || p.value().numel() != e.numel) {
      throw std::invalid_argument("parameter layout mismatch at " + e.name + " (model has " +
                                  p.key() + ")");
    }
    out.push_back(p.value());
  }
  return out;
}

torch::Tensor FlatView(float* flat, const ParamEntry& e) {
  return torch::from_blob(flat + e.offset, {e.numel}, torch::kFloat);
}

}  // namespace

ParamLayout LayoutOf(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> tensors;
  for (const auto& p : module.named_parameters()) {
    tensors.emplace_back(p.key(), p.value().sizes().vec());
  }
  return ParamLayout(tensors);
}

void CopyParamsOut(const torch::nn::Module& module, const ParamLayout& layout, float* flat) {
  auto params = Checked(module, layout);
  for (size_t i = 0; i < params.size(); ++i) {
    FlatView(flat, layout.entries()[i]).copy_(params[i].detach().reshape(-1));
  }
}

void CopyParamsIn(torch::nn::Module& module, const ParamLayout& layout, const float* flat) {
  CopyParamsIn(module, layout, flat, 0, layout.entries().size());
}

void CopyParamsIn(torch::nn::Module& module, const ParamLayout& layout, const float* flat,
                  size_t first, size_t end) {
  torch::NoGradGuard no_grad;
  auto params = Checked(module, layout);
  for (size_t i = first; i < std::min(end, params.size()); ++i) {
    auto src = FlatView(const_cast<float*>(flat), layout.entries()[i]);
    params[i].view(-1).copy_(src);
  }
}

void CopyGradsOut(const torch::nn::Module& module, const ParamLayout& layout, float* flat) {
  auto params = Checked(module, layout);
  for (size_t i = 0; i < params.size(); ++i) {
    auto dst = FlatView(flat, layout.entries()[i]);
    const auto& g = params[i].grad();
    if (g.defined()) {
      dst.copy_(g.reshape(-1));
    } else {
      dst.zero_();
    }
  }
}

void CopyGradsIn(torch::nn::Module& module, const ParamLayout& layout, const float* flat) {
  auto params = Checked(module, layout);
  for (size_t i = 0; i < params.size(); ++i) {
    auto src = FlatView(const_cast<float*>(flat), layout.entries()[i]);
    auto& g = params[i].mutable_grad();
    if (!g.defined()) g = torch::zeros_like(params[i]);
    g.view(-1).copy_(src);
  }
}

}  // namespace tteps
