// DeepTTE's geo-convolution (geo_conv.h) on the CPU over the real local paths only, made in the
// LSTM's packed order (cpu_lstm.h): one autograd node with its own forward and backward, instead
// of LibTorch's operators over the zero-padded batch (which at batch 64 holds 2.3 times the real
// points) and a gather of the LSTM's rows from it.
#pragma once

#include <torch/torch.h>

#include "model/deeptte/batch_tensors.h"
#include "model/deeptte/cpu_lstm.h"

namespace tteps::deeptte {

struct GeoConvWeights {
  torch::Tensor state_table;    // [2, 2]: the state embedding
  torch::Tensor coords_weight;  // [16, 4], coords_bias [16]: process_coords
  torch::Tensor coords_bias;
  torch::Tensor conv_weight;  // [F, 16, k], conv_bias [F]: the convolution
  torch::Tensor conv_bias;
};

// Row i: local path padded_index[i] of `steps` (trip b, path t: the points t .. t + k - 1) as
// GeoConv computes it, elu of the convolution, then local_dist[b][t]: [N, F + 1] floats.
// local_dist ([B, T - k + 1]) is data: no gradient reaches it (checked). The same as GeoConv's
// rows to float rounding (CpuLstm.TheModelsLossAndGradientsEqualThoseWithLibTorchsLstm).
torch::Tensor PackedGeoConv(const BatchTensors& batch, const torch::Tensor& local_dist,
                            const PackedSteps& steps, const GeoConvWeights& weights);

}  // namespace tteps::deeptte
