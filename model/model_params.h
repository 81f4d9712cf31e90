// Copies a LibTorch module's parameters and gradients to and from a flat float buffer laid
// out by ParamLayout. The buffer must hold layout.total() floats.
#pragma once

#include <torch/torch.h>

#include "model/param_layout.h"

namespace tteps {

ParamLayout LayoutOf(const torch::nn::Module& module);

void CopyParamsOut(const torch::nn::Module& module, const ParamLayout& layout, float* flat);
void CopyParamsIn(torch::nn::Module& module, const ParamLayout& layout, const float* flat);
// Only the layout's entries [first, end).
void CopyParamsIn(torch::nn::Module& module, const ParamLayout& layout, const float* flat,
                  size_t first, size_t end);
// A parameter without a gradient contributes zeros.
void CopyGradsOut(const torch::nn::Module& module, const ParamLayout& layout, float* flat);
void CopyGradsIn(torch::nn::Module& module, const ParamLayout& layout, const float* flat);

}  // namespace tteps
