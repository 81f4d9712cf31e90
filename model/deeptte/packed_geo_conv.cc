#include "model/deeptte/packed_geo_conv.h"

#include <cstring>
#include <vector>

#include "model/deeptte/tensor_gemm.h"

namespace tteps::deeptte {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The real points' inputs and each row's first point: coords [P, 2] (longitude, latitude) and
// states [P] of the trips' points one trip after another; first [N]: row i's first point;
// dist [N]: row i's local_dist.
struct PackedPoints {
  torch::Tensor coords, states, first, dist;
};

PackedPoints Gather(const BatchTensors& b, const torch::Tensor& local_dist,
                    const PackedSteps& steps) {
  const auto lengths = b.lengths.contiguous();
  const auto lngs = b.lngs.contiguous(), lats = b.lats.contiguous();
  const auto states = b.states.contiguous(), dist = local_dist.contiguous();
  const int64_t batch = b.size(), points = b.lngs.size(1), paths = local_dist.size(1);
  const int64_t* len = lengths.data_ptr<int64_t>();
  std::vector<int64_t> offset(batch + 1, 0);
  for (int64_t r = 0; r < batch; ++r) offset[r + 1] = offset[r] + len[r];
  PackedPoints out;
  out.coords = torch::empty({offset[batch], 2}, lngs.options());
  out.states = torch::empty({offset[batch]}, states.options());
  float* c = out.coords.data_ptr<float>();
  int64_t* s = out.states.data_ptr<int64_t>();
  const float *lng = lngs.data_ptr<float>(), *lat = lats.data_ptr<float>();
  const int64_t* st = states.data_ptr<int64_t>();
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t p = 0; p < len[r]; ++p) {
      const int64_t at = offset[r] + p, from = r * points + p;
      c[2 * at] = lng[from];
      c[2 * at + 1] = lat[from];
      s[at] = st[from];
    }
  }
  const int64_t rows = steps.padded_index.numel();
  out.first = torch::empty({rows}, steps.padded_index.options());
  out.dist = torch::empty({rows}, dist.options());
  const int64_t *where = steps.padded_index.data_ptr<int64_t>(),
                *trip = steps.trip.data_ptr<int64_t>();
  int64_t* first = out.first.data_ptr<int64_t>();
  float* d = out.dist.data_ptr<float>();
  const float* dp = dist.data_ptr<float>();
  for (int64_t i = 0; i < rows; ++i) {
    first[i] = offset[trip[i]] + (where[i] - trip[i] * paths);
    d[i] = dp[where[i]];
  }
  return out;
}

// The convolution's weight [F, channels, k] as [F, k * channels]: entry j * channels + c is
// W[f][c][j], as a window's point-major row lays its inputs out.
torch::Tensor PointMajor(const torch::Tensor& conv_weight) {
  return conv_weight.permute({0, 2, 1}).reshape({conv_weight.size(0), -1});
}

// Through the ELU: its slope is 1 above 0, e^x = elu(x) + 1 below. (The distance column's
// gradient is left behind: local_dist is data.)
torch::Tensor EluBackward(torch::Tensor g, const torch::Tensor& e) {
  if (g.stride(1) != 1) g = g.contiguous();
  const int64_t rows = e.size(0), filters = e.size(1), stride = g.stride(0);
  auto d_conv = torch::empty({rows, filters}, e.options());
  const float *gp = g.data_ptr<float>(), *ep = e.data_ptr<float>();
  float* d = d_conv.data_ptr<float>();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t f = 0; f < filters; ++f) {
      const float x = ep[i * filters + f], grad = gp[i * stride + f];
      d[i * filters + f] = x > 0 ? grad : grad * (x + 1);
    }
  }
  return d_conv;
}

// The windows' gradients back to the points (each in up to k windows, window i starting at
// point first[i]), then through the tanh whose outputs are y.
torch::Tensor WindowsToPoints(const torch::Tensor& d_windows, const torch::Tensor& first,
                              const torch::Tensor& y) {
  const int64_t points = y.size(0), channels = y.size(1);
  const int64_t rows = d_windows.size(0), window = d_windows.size(1);
  auto d_y = torch::zeros({points, channels}, y.options());
  const float* dw = d_windows.data_ptr<float>();
  const int64_t* f = first.data_ptr<int64_t>();
  float* dy = d_y.data_ptr<float>();
  for (int64_t i = 0; i < rows; ++i) {
    float* to = dy + f[i] * channels;
    const float* from = dw + i * window;
    for (int64_t c = 0; c < window; ++c) to[c] += from[c];
  }
  const float* yp = y.data_ptr<float>();
  for (int64_t i = 0; i < points * channels; ++i) dy[i] *= 1 - yp[i] * yp[i];
  return d_y;
}

// The state embedding's share of each point's input gradient, added into its row of the table.
torch::Tensor StateRows(const torch::Tensor& d_state, const torch::Tensor& states,
                        int64_t table_rows) {
  auto d_table = torch::zeros({table_rows, 2}, d_state.options());
  const float* ds = d_state.data_ptr<float>();
  const int64_t* s = states.data_ptr<int64_t>();
  float* dt = d_table.data_ptr<float>();
  for (int64_t i = 0; i < d_state.size(0); ++i) {
    dt[2 * s[i]] += ds[2 * i];
    dt[2 * s[i] + 1] += ds[2 * i + 1];
  }
  return d_table;
}

struct GeoConvNode : public torch::autograd::Function<GeoConvNode> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& state_table,
                               const torch::Tensor& coords_weight, const torch::Tensor& coords_bias,
                               const torch::Tensor& conv_weight, const torch::Tensor& conv_bias,
                               const torch::Tensor& coords, const torch::Tensor& states,
                               const torch::Tensor& first, const torch::Tensor& dist) {
    const int64_t points = coords.size(0), rows = first.numel();
    const int64_t filters = conv_weight.size(0), channels = conv_weight.size(1);
    const int64_t k = conv_weight.size(2), window = channels * k;
    const auto table = state_table.contiguous();
    // Each point's [longitude, latitude, its state's embedding].
    auto in4 = torch::empty({points, 4}, coords.options());
    {
      const float *c = coords.data_ptr<float>(), *tp = table.data_ptr<float>();
      const int64_t* s = states.data_ptr<int64_t>();
      float* p = in4.data_ptr<float>();
      for (int64_t i = 0; i < points; ++i) {
        TORCH_CHECK(s[i] >= 0 && s[i] < table.size(0), "point state ", s[i], " out of range");
        p[4 * i] = c[2 * i];
        p[4 * i + 1] = c[2 * i + 1];
        p[4 * i + 2] = tp[2 * s[i]];
        p[4 * i + 3] = tp[2 * s[i] + 1];
      }
    }
    auto y = AddMm(coords_bias, in4, false, coords_weight, true).tanh_();  // [P, channels]
    // Row i's k points one after another (point-major: k copies of a point's row), against the
    // convolution's weight [F, channels, k] permuted to match, [F, k, channels].
    auto windows = torch::empty({rows, window}, coords.options());
    {
      const float* yp = y.data_ptr<float>();
      const int64_t* f = first.data_ptr<int64_t>();
      float* w = windows.data_ptr<float>();
      for (int64_t i = 0; i < rows; ++i) {
        std::memcpy(w + i * window, yp + f[i] * channels, window * sizeof(float));
      }
    }
    const auto w2 = PointMajor(conv_weight);
    auto e = torch::elu(AddMm(conv_bias, windows, false, w2, true));  // [N, F]
    auto out = torch::empty({rows, filters + 1}, coords.options());
    {
      const float *ep = e.data_ptr<float>(), *dp = dist.data_ptr<float>();
      float* o = out.data_ptr<float>();
      for (int64_t i = 0; i < rows; ++i) {
        std::memcpy(o + i * (filters + 1), ep + i * filters, filters * sizeof(float));
        o[i * (filters + 1) + filters] = dp[i];
      }
    }
    ctx->save_for_backward({in4, y, windows, e, states, first, coords_weight, conv_weight});
    ctx->saved_data["table_rows"] = table.size(0);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const variable_list none(9);
    if (!grad_out[0].defined()) return none;
    const auto saved = ctx->get_saved_variables();
    const auto &in4 = saved[0], &y = saved[1], &windows = saved[2], &e = saved[3];
    const auto &states = saved[4], &first = saved[5], &coords_weight = saved[6];
    const auto& conv_weight = saved[7];
    const int64_t filters = e.size(1), channels = y.size(1), k = windows.size(1) / channels;
    const auto d_conv = EluBackward(grad_out[0], e);
    const auto w2 = PointMajor(conv_weight);
    auto d_conv_weight = Mm(d_conv, true, windows, false)
                             .view({filters, k, channels})
                             .permute({0, 2, 1})
                             .contiguous();
    auto d_conv_bias = d_conv.sum(0);
    const auto d_windows = Mm(d_conv, false, w2, false);
    const auto d_y = WindowsToPoints(d_windows, first, y);
    auto d_coords_weight = Mm(d_y, true, in4, false);
    auto d_coords_bias = d_y.sum(0);
    // The state embedding's share of each point's input, added into its row of the table.
    const auto d_state = Mm(d_y, false, coords_weight.narrow(1, 2, 2), false);  // [P, 2]
    auto d_table = StateRows(d_state, states, ctx->saved_data["table_rows"].toInt());
    variable_list grads = none;
    grads[0] = d_table;
    grads[1] = d_coords_weight;
    grads[2] = d_coords_bias;
    grads[3] = d_conv_weight;
    grads[4] = d_conv_bias;
    return grads;
  }
};

}  // namespace

torch::Tensor PackedGeoConv(const BatchTensors& batch, const torch::Tensor& local_dist,
                            const PackedSteps& steps, const GeoConvWeights& weights) {
  TORCH_CHECK(batch.lngs.device().is_cpu() && batch.lngs.scalar_type() == torch::kFloat &&
                  local_dist.scalar_type() == torch::kFloat,
              "PackedGeoConv runs on float batches on the CPU");
  TORCH_CHECK(!local_dist.requires_grad(), "PackedGeoConv: local_dist is data, without gradient");
  TORCH_CHECK(weights.state_table.size(1) == 2 && weights.coords_weight.size(1) == 4 &&
                  weights.conv_weight.size(1) == weights.coords_weight.size(0),
              "PackedGeoConv: unexpected weight shapes");
  const PackedPoints p = Gather(batch, local_dist, steps);
  return GeoConvNode::apply(weights.state_table, weights.coords_weight, weights.coords_bias,
                            weights.conv_weight, weights.conv_bias, p.coords, p.states, p.first,
                            p.dist);
}

}  // namespace tteps::deeptte
