// DeepTTE's LSTM on the CPU: each layer one autograd node with its own forward and backward,
// instead of LibTorch's dozen operators per time step and layer (and as many backward nodes).
// The same parameters, names and layout as the torch::nn::LSTM it runs; the same results to
// float rounding (cpu_lstm_test compares outputs and gradients with LibTorch's).
//
// Per layer and step, one GEMM of the running rows' [h_prev, x] against [W_hh, W_ih]^T (the
// input's part of the trip, the same at every step, once per trip) and one pass of lstm_math
// over their gates. Backward: per step one pass and two GEMMs (against W_hh and W_ih) for the
// gradients reaching the rows' [h_prev, x]; the weights' gradients in one GEMM per block of
// about 256 rows, as soon as their gates' gradients are done.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace tteps::deeptte {

// rnn: batch first, with biases, no dropout, one direction. The input at step t of row b is
// [inputs[b][t], per_trip[b]] (per_trip's part of the projection is computed once per row):
// inputs [B, T, F] and per_trip [B, P] (P may be 0), float on the CPU. lengths: [B] int64, each
// row's real steps (at least 1). Returns [B, T, H]: the last layer's outputs, zero at the
// padded steps (a row's padded steps are not computed at all). data_cols: inputs' last columns
// that are data, which no gradient needs to reach (the model's distances): their gradient is
// returned as zero, and the backward's products skip them (an odd width, 33 columns for 32,
// cost the layer's input gradient a fifth of its speed).
torch::Tensor CpuLstm(const torch::nn::LSTM& rnn, const torch::Tensor& inputs,
                      const torch::Tensor& per_trip, const torch::Tensor& lengths,
                      int64_t data_cols = 0);

// The last layer's outputs at the real steps only, in packed order (as PackedSequence lays them
// out): the rows of step t are those of the active[t] longest trips, longest first. What reads
// them per row (the local estimator, the attention) then skips the padding, and no padded copy
// is made.
struct PackedSteps {
  torch::Tensor rows;           // [N, H], N = the real steps of all trips
  torch::Tensor padded_index;   // [N] int64: each row's place b * T + t in the [B, T] padding
  torch::Tensor trip;           // [N] int64: each row's trip b
  std::vector<int64_t> active;  // rows running at each step (non-increasing)
  std::vector<int64_t> order;   // the trips, longest first: rank r of a step's rows is order[r]
};
// Where each step's rows begin in the packed layout: the rows running at step t (those of the
// longest active[t] trips, longest first) are rows begin[t] .. begin[t] + active[t].
std::vector<int64_t> StepBegins(const std::vector<int64_t>& active);

PackedSteps CpuLstmPacked(const torch::nn::LSTM& rnn, const torch::Tensor& inputs,
                          const torch::Tensor& per_trip, const torch::Tensor& lengths,
                          int64_t data_cols = 0);

// The same in two parts, for inputs made in packed order in the first place (packed_geo_conv.h):
// the layout of `lengths` ([B] int64, each in [1, steps]) over `steps` padded steps (rows
// undefined), then the LSTM over inputs [N, F] in that layout (its rows filled in).
PackedSteps PackSteps(const torch::Tensor& lengths, int64_t steps);
void CpuLstmOnPacked(const torch::nn::LSTM& rnn, const torch::Tensor& packed_inputs,
                     const torch::Tensor& per_trip, int64_t data_cols, PackedSteps& steps);

}  // namespace tteps::deeptte
