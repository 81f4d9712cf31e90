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
  locs = torch::tanh(process_coords_(locs));  // [B, T, 16]
  torch::Tensor conv;
  if (locs.is_cuda()) {
    conv = conv_(locs.permute({0, 2, 1})).permute({0, 2, 1});  // [B, T-k+1, F]
  } else {
    // On the CPU as one matrix product: each local path's k points side by side, laid out as
    // the convolution's weight [F, 16, k] (oneDNN spent more on this small convolution's
    // set-up than on its arithmetic).
    const int64_t k = conv_->options.kernel_size()->front();
    auto windows = locs.unfold(1, k, 1);  // [B, T-k+1, 16, k]
    windows = windows.reshape({windows.size(0), windows.size(1), -1});
    conv = torch::nn::functional::linear(windows, conv_->weight.view({conv_->weight.size(0), -1}),
                                         conv_->bias);
  }
  return torch::cat({torch::elu(conv), local_dist.unsqueeze(2)}, 2);
}

torch::Tensor LocalPathDelta(const torch::Tensor& seq, int64_t k) {
  const int64_t t = seq.size(1);
  return seq.slice(1, k - 1, t) - seq.slice(1, 0, t - k + 1);
}

}  // namespace tteps::deeptte
