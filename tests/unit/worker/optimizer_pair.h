// Two optimizers stepped over the same parameters and gradients (multi_tensor_optimizer_test,
// gpu_test): tensors of several shapes, six steps, one parameter without a gradient in two.
// With `scale` other than 1, A steps with StepScaled(scale) on the gradients as they are and B
// on the gradients multiplied by it (in float) first.
#pragma once

#include <torch/torch.h>

#include <utility>
#include <vector>

namespace tteps::testing_util {

// The parameters after the steps, for optimizer A and for optimizer B.
template <typename A, typename B, typename Options>
std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> StepBoth(const Options& options,
                                                                           torch::Device device,
                                                                           double scale = 1) {
  torch::manual_seed(3);
  const std::vector<std::vector<int64_t>> shapes = {{7}, {3, 5}, {64, 16}, {1}, {2, 3, 4}};
  std::vector<torch::Tensor> a, b;
  for (const auto& s : shapes) {
    auto init = torch::randn(s).to(device);
    a.push_back(init.clone().requires_grad_(true));
    b.push_back(init.clone().requires_grad_(true));
  }
  A opt_a(a, options);
  B opt_b(b, options);
  for (int step = 0; step < 6; ++step) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const bool skipped = i == 3 && (step == 1 || step == 2);
      auto g = torch::randn(shapes[i]).to(device) * (1 + step);
      for (auto* params : {&a, &b}) {
        auto& p = (*params)[i];
        if (skipped) {
          p.mutable_grad() = torch::Tensor();
        } else {
          p.mutable_grad() = g.clone();
        }
      }
    }
    if (scale == 1) {
      opt_a.step();
    } else {
      opt_a.StepScaled(scale);
      for (auto& p : b) {
        if (p.grad().defined()) p.mutable_grad().mul_(static_cast<float>(scale));
      }
    }
    opt_b.step();
  }
  std::vector<torch::Tensor> out_a, out_b;
  for (auto& t : a) out_a.push_back(t.detach().cpu());
  for (auto& t : b) out_b.push_back(t.detach().cpu());
  return {out_a, out_b};
}

}  // namespace tteps::testing_util
