// An embedding lookup on the CPU as one autograd node whose backward adds each index's gradient
// row in a plain loop, where LibTorch's dense embedding backward runs a TensorIterator per
// index. The same rows and, summed in index order as LibTorch sums them, the same gradients.
#pragma once

#include <torch/torch.h>

namespace tteps::deeptte {

// weight [N, D] float on the CPU; indices int64 of any shape, each in [0, N). Returns
// [indices..., D], as torch::nn::Embedding without padding_idx or max_norm.
torch::Tensor CpuEmbedding(const torch::Tensor& weight, const torch::Tensor& indices);

// The module's lookup: CpuEmbedding where it applies (CPU float, no padding_idx, max_norm or
// sparse gradient), else the module's own forward.
torch::Tensor Embed(torch::nn::Embedding& table, const torch::Tensor& indices, bool fused);

}  // namespace tteps::deeptte
