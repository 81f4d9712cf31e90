// DeepTTE's attention pooling over the LSTM's packed rows (cpu_lstm.h) on the CPU: one autograd
// node with its own forward and backward, instead of a dozen LibTorch operators (and as many
// backward nodes) over the zero-padded [B, T, H] outputs.
#pragma once

#include <torch/torch.h>

#include "model/deeptte/cpu_lstm.h"

namespace tteps::deeptte {

// For each trip b, weights softmax over its real steps t of -<h_t, query_b>, and the pooled
// sum_t w_t h_t: [B, H] in the trips' order. query: [B, H], float on the CPU. The same as
// SpatioTemporal's padded form (to float rounding; spatio_temporal_test compares them).
torch::Tensor PackedAttentionPool(const PackedSteps& steps, const torch::Tensor& query);

}  // namespace tteps::deeptte
