// Geo-Conv: maps GPS points to a 16-d space and convolves local paths of kernel_size points.
#pragma once

#include <torch/torch.h>

#include "model/deeptte/batch_tensors.h"
#include "model/deeptte/cpu_lstm.h"

namespace tteps::deeptte {

class GeoConvImpl : public torch::nn::Module {
 public:
  GeoConvImpl(int64_t kernel_size, int64_t num_filter);
  // local_dist: [B, T-k+1] normalised length of each local path.
  // Returns [B, T-k+1, num_filter + 1].
  torch::Tensor forward(const BatchTensors& batch, const torch::Tensor& local_dist);
  // The same rows on the CPU for the real local paths only, in the LSTM's packed order
  // (packed_geo_conv.h): [N, num_filter + 1].
  torch::Tensor ForwardPacked(const BatchTensors& batch, const torch::Tensor& local_dist,
                              const PackedSteps& steps);

 private:
  torch::nn::Embedding state_em_{nullptr};
  torch::nn::Linear process_coords_{nullptr};
  torch::nn::Conv1d conv_{nullptr};
};
TORCH_MODULE(GeoConv);

// seq[:, i + k - 1] - seq[:, i] for every local path i: [B, T] -> [B, T-k+1].
torch::Tensor LocalPathDelta(const torch::Tensor& seq, int64_t kernel_size);

}  // namespace tteps::deeptte
