// The two heads: the entire estimator (whole trip) and the local estimator (each local path).
#pragma once

#include <torch/torch.h>

namespace tteps::deeptte {

// Linear(in, width) -> num_residual x (x + leaky_relu(Linear(width, width))) -> Linear(width, 1).
class EntireEstimatorImpl : public torch::nn::Module {
 public:
  EntireEstimatorImpl(int64_t input_size, int64_t num_residual, int64_t width);
  torch::Tensor forward(const torch::Tensor& x);  // [B, in] -> [B] normalised time
  // On the CPU in float, the layers as one node (fused_mlp.h, the default) or LibTorch's.
  void set_fused_cpu(bool on) { fused_cpu_ = on; }

 private:
  bool fused_cpu_ = true;
  torch::nn::Linear input2hid_{nullptr}, hid2out_{nullptr};
  torch::nn::ModuleList residuals_;
};
TORCH_MODULE(EntireEstimator);

// in -> 64 -> 32 -> 1 with leaky ReLU, applied to every local path.
class LocalEstimatorImpl : public torch::nn::Module {
 public:
  explicit LocalEstimatorImpl(int64_t input_size);
  torch::Tensor forward(const torch::Tensor& x);  // [..., in] -> [...] normalised time
  void set_fused_cpu(bool on) { fused_cpu_ = on; }

 private:
  bool fused_cpu_ = true;
  torch::nn::Linear input2hid_{nullptr}, hid2hid_{nullptr}, hid2out_{nullptr};
};
TORCH_MODULE(LocalEstimator);

}  // namespace tteps::deeptte
