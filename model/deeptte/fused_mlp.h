// DeepTTE's estimators (estimators.h) on the CPU: linear layers with leaky ReLUs and residual
// additions, each layer one autograd node with its own forward and backward and its products in
// our kernels (gemm.h), instead of three or four LibTorch operators and as many
// backward nodes per layer, each a pass over memory.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace tteps::deeptte {

struct MlpLayer {
  torch::Tensor weight;  // [out, in], as torch::nn::Linear holds it
  torch::Tensor bias;    // [out]
  bool leaky;            // y = leaky_relu(z) (LibTorch's slope, 0.01), else y = z
  bool residual;         // the layer's output is input + y (out == in), else y
};

// x: [N, in] float on the CPU; returns the last layer's output [N, out]. The same as LibTorch's
// Linear, leaky_relu and add to float rounding (CpuLstm.TheModelsLossAndGradientsEqualThoseWith
// LibTorchsLstm compares the model's loss and gradients with and without these nodes).
torch::Tensor FusedMlp(const torch::Tensor& x, const std::vector<MlpLayer>& layers);

}  // namespace tteps::deeptte
