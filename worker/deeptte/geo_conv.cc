#include "worker/deeptte/geo_conv.h"

namespace tteps::deeptte {

GeoConvImpl::GeoConvImpl(int64_t kernel_size, int64_t num_filter) {
  state_em_ = register_module("state_em", torch::nn::Embedding(2, 2));
  process_coords_ = register_module("process_coords", torch::nn::Linear(4, 16));
  conv_ = register_module("conv",
                          torch::nn::Conv1d(torch::nn::Conv1dOptions(16, num_filter, kernel_size)));
}

torch::Tensor GeoConvImpl::forward(const BatchTensors& b, const torch::Tensor& local_dist) {
  auto locs = torch::cat({b.lngs.unsqueeze(2), b.lats.unsqueeze(2), state_em_(b.states)}, 2);
  locs = torch::tanh(process_coords_(locs)).permute({0, 2, 1});  // [B, 16, T]
  auto conv = torch::elu(conv_(locs)).permute({0, 2, 1});        // [B, T-k+1, F]
  return torch::cat({conv, local_dist.unsqueeze(2)}, 2);
}

torch::Tensor LocalPathDelta(const torch::Tensor& seq, int64_t k) {
  const int64_t t = seq.size(1);
  return seq.slice(1, k - 1, t) - seq.slice(1, 0, t - k + 1);
}

}  // namespace tteps::deeptte
