// Products of float CPU tensors with gemm.h's kernels, for the model's CPU nodes: the same
// rounding on every instruction set (gemm.h), where LibTorch's mm rounds as the BLAS kernel it
// picks at run time does.
#pragma once

#include <torch/torch.h>

namespace tteps::deeptte {

// op(a) op(b), where op(x) is x or, when trans, x^T. a and b: 2-d float CPU tensors whose rows
// are contiguous (stride(1) == 1; a narrowed view is fine), given untransposed.
torch::Tensor Mm(const torch::Tensor& a, bool trans_a, const torch::Tensor& b, bool trans_b);

// bias (one value per column) + op(a) op(b).
torch::Tensor AddMm(const torch::Tensor& bias, const torch::Tensor& a, bool trans_a,
                    const torch::Tensor& b, bool trans_b);

}  // namespace tteps::deeptte
