// DeepTTE's LSTM on the CPU: each layer one autograd node with its own forward and backward,
// instead of LibTorch's dozen operators per time step and layer (and as many backward nodes).
// The same parameters, names and layout as the torch::nn::LSTM it runs; the same results to
// float rounding (cpu_lstm_test compares outputs and gradients with LibTorch's).
//
// Per layer: the input projections of every step in one GEMM (of the inputs the same at every
// step, once per trip); per step one GEMM for the
// recurrence over the rows still running and one pass of lstm_math over their gates. Backward:
// per step one pass and one GEMM for the gradient reaching the previous h; then the weights'
// gradients and the input's in three GEMMs over all steps at once.
#pragma once

#include <torch/torch.h>

namespace tteps::deeptte {

// rnn: batch first, with biases, no dropout, one direction. The input at step t of row b is
// [inputs[b][t], per_trip[b]] (per_trip's part of the projection is computed once per row):
// inputs [B, T, F] and per_trip [B, P] (P may be 0), float on the CPU. lengths: [B] int64, each
// row's real steps (at least 1). Returns [B, T, H]: the last layer's outputs, zero at the
// padded steps (a row's padded steps are not computed at all).
torch::Tensor CpuLstm(const torch::nn::LSTM& rnn, const torch::Tensor& inputs,
                      const torch::Tensor& per_trip, const torch::Tensor& lengths);

}  // namespace tteps::deeptte
