#include "model/deeptte/geo_conv.h"

#include "model/deeptte/packed_geo_conv.h"

namespace tteps::deeptte {
namespace {

// Calls f(window entry, point entry) for every entry of every window: entry c * k + j of window
// (b, t) is channel c of point (b, t + j). The forward pass copies along this map, the backward
// adds back along it.
template <typename F>
void ForEachWindowEntry(int64_t batch, int64_t steps, int64_t channels, int64_t k, F f) {
  const int64_t paths = steps - k + 1;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < paths; ++t) {
      const int64_t row = (b * paths + t) * channels * k;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t point = (b * steps + t + j) * channels;
        for (int64_t c = 0; c < channels; ++c) f(row + c * k + j, point + c);
      }
    }
  }
}

// x [B, T, C] -> [B, T-k+1, C * k]: each local path's k points, laid out as x.unfold(1, k, 1)
// reshaped (channel-major, the convolution weight's [F, C, k]), with its backward as one pass
// of additions (with unfold and LibTorch's unfold_backward, steps of 16 and 64 trips took 2.7 and
// 1.4 % longer).
struct LocalWindows : public torch::autograd::Function<LocalWindows> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               int64_t k) {
    const auto xc = x.contiguous();
    const int64_t batch = xc.size(0), steps = xc.size(1), channels = xc.size(2);
    auto out = torch::empty({batch, steps - k + 1, channels * k}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    ForEachWindowEntry(batch, steps, channels, k, [&](int64_t w, int64_t p) { o[w] = in[p]; });
    ctx->saved_data["k"] = k;
    ctx->saved_data["steps"] = steps;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    if (!grad_out[0].defined()) return {torch::Tensor(), torch::Tensor()};
    const auto g = grad_out[0].contiguous();
    const int64_t k = ctx->saved_data["k"].toInt(), steps = ctx->saved_data["steps"].toInt();
    const int64_t batch = g.size(0), channels = g.size(2) / k;
    auto dx = torch::zeros({batch, steps, channels}, g.options());
    const float* gp = g.data_ptr<float>();
    float* d = dx.data_ptr<float>();
    ForEachWindowEntry(batch, steps, channels, k, [&](int64_t w, int64_t p) { d[p] += gp[w]; });
    return {dx, torch::Tensor()};
  }
};

}  // namespace

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
    const auto windows =
        locs.scalar_type() == torch::kFloat
            ? LocalWindows::apply(locs, k)
            : locs.unfold(1, k, 1).reshape({locs.size(0), locs.size(1) - k + 1, -1});
    conv = torch::nn::functional::linear(windows, conv_->weight.view({conv_->weight.size(0), -1}),
                                         conv_->bias);
  }
  return torch::cat({torch::elu(conv), local_dist.unsqueeze(2)}, 2);
}

torch::Tensor GeoConvImpl::ForwardPacked(const BatchTensors& b, const torch::Tensor& local_dist,
                                         const PackedSteps& steps) {
  return PackedGeoConv(b, local_dist, steps,
                       {state_em_->weight, process_coords_->weight, process_coords_->bias,
                        conv_->weight, conv_->bias});
}

torch::Tensor LocalPathDelta(const torch::Tensor& seq, int64_t k) {
  const int64_t t = seq.size(1);
  return seq.slice(1, k - 1, t) - seq.slice(1, 0, t - k + 1);
}

}  // namespace tteps::deeptte
