// Spatio-temporal component: Geo-Conv features + attributes -> 2-layer LSTM -> pooling.
#pragma once

#include <torch/torch.h>

#include "model/deeptte/cpu_lstm.h"
#include "model/deeptte/geo_conv.h"

namespace tteps::deeptte {

// The LSTM's outputs come in one of two forms: padded (LibTorch's LSTM: hiddens and mask) or,
// on the CPU with our LSTM, packed (only the real steps' rows; then hiddens and mask are
// undefined).
struct SpatioTemporalOut {
  torch::Tensor hiddens;        // [B, T', kHiddenSize] LSTM output per local path, zero padded
  torch::Tensor mask;           // [B, T'] bool: true on real local paths
  PackedSteps packed;           // the rows of the real local paths (cpu_lstm.h)
  torch::Tensor local_lengths;  // [B] int64: local paths per trip (length - k + 1)
  torch::Tensor pooled;         // [B, kHiddenSize]

  bool is_packed() const { return packed.rows.defined(); }
};

class SpatioTemporalImpl : public torch::nn::Module {
 public:
  SpatioTemporalImpl(int64_t kernel_size, int64_t num_filter, const std::string& pooling);
  SpatioTemporalOut forward(const BatchTensors& batch, const torch::Tensor& attr,
                            const torch::Tensor& local_dist);
  // On the CPU, the geo-convolution of packed_geo_conv.h, the LSTM of cpu_lstm.h with packed
  // outputs and the attention of packed_attention.h (the default), or LibTorch's operators on
  // the padded batch.
  void set_fused_cpu(bool on) { fused_cpu_ = on; }

 private:
  // LibTorch's LSTM over [conv, attr] at every step: conv [B, T', F + 1], attr [B, kAttrSize]
  // -> [B, T', kHiddenSize]; values at padded steps are unspecified.
  torch::Tensor RunLstm(const torch::Tensor& conv, const torch::Tensor& attr,
                        const torch::Tensor& lengths);
  // Attention weights exp(-<h_t, tanh(W attr)>) normalised over the real steps only:
  // the public code let padded steps (h = 0, weight exp(0) = 1) into the sum.
  torch::Tensor AttentionPool(const torch::Tensor& padded, const torch::Tensor& mask,
                              const torch::Tensor& attr);

  int64_t kernel_size_;
  bool attention_;
  bool fused_cpu_ = true;
  GeoConv geo_conv_{nullptr};
  torch::nn::LSTM rnn_{nullptr};
  torch::nn::Linear attr2atten_{nullptr};
};
TORCH_MODULE(SpatioTemporal);

}  // namespace tteps::deeptte
