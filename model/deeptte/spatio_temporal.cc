#include "model/deeptte/spatio_temporal.h"

#include "model/deeptte/cpu_lstm.h"
#include "model/deeptte/fused_mlp.h"
#include "model/deeptte/model_config.h"
#include "model/deeptte/packed_attention.h"

namespace tteps::deeptte {

SpatioTemporalImpl::SpatioTemporalImpl(int64_t kernel_size, int64_t num_filter,
                                       const std::string& pooling)
    : kernel_size_(kernel_size), attention_(pooling == "attention") {
  geo_conv_ = register_module("geo_conv", GeoConv(kernel_size, num_filter));
  rnn_ = register_module(
      "rnn", torch::nn::LSTM(torch::nn::LSTMOptions(num_filter + 1 + kAttrSize, kHiddenSize)
                                 .num_layers(2)
                                 .batch_first(true)));
  if (attention_) {
    attr2atten_ = register_module("attr2atten", torch::nn::Linear(kAttrSize, kHiddenSize));
  }
}

SpatioTemporalOut SpatioTemporalImpl::forward(const BatchTensors& b, const torch::Tensor& attr,
                                              const torch::Tensor& local_dist) {
  SpatioTemporalOut out;
  out.local_lengths = b.lengths - (kernel_size_ - 1);
  if (fused_cpu_ && b.lngs.device().is_cpu() && b.lngs.scalar_type() == torch::kFloat) {
    // The geo-convolution's rows made in the LSTM's packed order; their last column is
    // local_dist: data, whose gradient nothing reads.
    out.packed = PackSteps(out.local_lengths, local_dist.size(1));
    const auto conv = geo_conv_->ForwardPacked(b, local_dist, out.packed);
    CpuLstmOnPacked(rnn_, conv, attr, /*data_cols=*/1, out.packed);
    if (attention_) {
      // The query's product in our kernels too: none of the step's products go to the BLAS,
      // whose rounding depends on the kernel it picks (and on the rows of a worker's slice).
      const auto query = FusedMlp(attr, {{attr2atten_->weight, attr2atten_->bias, false, false}});
      out.pooled = PackedAttentionPool(out.packed, torch::tanh(query));
    } else {
      out.pooled = torch::zeros({b.size(), out.packed.rows.size(1)}, conv.options())
                       .index_add(0, out.packed.trip, out.packed.rows) /
                   out.local_lengths.unsqueeze(1).to(conv.scalar_type());
    }
    return out;
  }
  auto conv = geo_conv_(b, local_dist);  // [B, T', F + 1]
  auto steps = torch::arange(conv.size(1), out.local_lengths.options());
  out.mask = steps.unsqueeze(0) < out.local_lengths.unsqueeze(1);
  out.hiddens =
      RunLstm(conv, attr, out.local_lengths).masked_fill(out.mask.logical_not().unsqueeze(2), 0.0);
  if (attention_) {
    out.pooled = AttentionPool(out.hiddens, out.mask, attr);
  } else {
    // Padded steps are zero, so the sum covers the real steps only.
    out.pooled = out.hiddens.sum(1) / out.local_lengths.unsqueeze(1).to(out.hiddens.scalar_type());
  }
  return out;
}

// LibTorch's LSTM (forward() runs the one of cpu_lstm.h instead on the CPU in float): it runs
// on padded inputs, not a packed sequence: it is causal, so the outputs at a trip's real steps
// do not depend on the padding after them, and only those are read.
// (Packing gives the same numbers, but its per-step slicing dominated the backward pass.)
// On the CPU, to keep padding cheap in large batches, trips are sorted by length and run in
// groups of kLstmGroup, each padded only to its own longest trip. On a GPU the whole batch is one
// cuDNN call: its time goes by the number of steps, not the rows, and each group would cost a
// call and a device sync.
torch::Tensor SpatioTemporalImpl::RunLstm(const torch::Tensor& conv, const torch::Tensor& attr,
                                          const torch::Tensor& lengths) {
  constexpr int64_t kLstmGroup = 64;
  const auto inputs = torch::cat({conv, attr.unsqueeze(1).expand({-1, conv.size(1), -1})}, 2);
  const int64_t batch = inputs.size(0), steps = inputs.size(1);
  if (batch <= kLstmGroup || inputs.is_cuda()) return std::get<0>(rnn_->forward(inputs));
  auto order = std::get<1>(lengths.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  auto sorted_inputs = inputs.index_select(0, order);
  auto sorted_lengths = lengths.index_select(0, order);
  std::vector<torch::Tensor> groups;
  for (int64_t start = 0; start < batch; start += kLstmGroup) {
    const int64_t end = std::min(batch, start + kLstmGroup);
    const int64_t group_steps = sorted_lengths[start].item<int64_t>();
    auto h =
        std::get<0>(rnn_->forward(sorted_inputs.slice(0, start, end).slice(1, 0, group_steps)));
    groups.push_back(torch::constant_pad_nd(h, {0, 0, 0, steps - group_steps}));
  }
  return torch::cat(groups, 0).index_select(0, torch::argsort(order));
}

torch::Tensor SpatioTemporalImpl::AttentionPool(const torch::Tensor& padded,
                                                const torch::Tensor& mask,
                                                const torch::Tensor& attr) {
  // Products with one vector per trip, as element-wise products and sums: LibTorch's bmm runs
  // (and differentiates) them as one small matrix product per trip.
  auto query = torch::tanh(attr2atten_(attr)).unsqueeze(1);  // [B, 1, H]
  auto score = -(padded * query).sum(2);                     // [B, T']
  score = score.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(score, /*dim=*/1);  // exp(-s) / sum exp(-s)
  return (weights.unsqueeze(2) * padded).sum(1);    // [B, H]
}

}  // namespace tteps::deeptte
