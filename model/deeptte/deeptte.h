// DeepTTE (Wang et al., AAAI 2018): attribute + spatio-temporal components and two estimators.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "model/data/norm_stats.h"
#include "model/deeptte/attr_net.h"
#include "model/deeptte/batch_tensors.h"
#include "model/deeptte/estimators.h"
#include "model/deeptte/model_config.h"
#include "model/deeptte/spatio_temporal.h"

namespace tteps::deeptte {

struct LossParts {
  torch::Tensor total;   // (1 - w) * entire + w * local, w = local_loss_weight
  torch::Tensor entire;  // mean |pred - label| / label over trips
  torch::Tensor local;   // mean |pred - label| / (label + 10 s) over local paths
};

// Local loss on seconds: |pred - label| / (label + 10 s) averaged over each trip's real local
// paths (mask, [B, T']), then over trips.
torch::Tensor LocalPathLoss(const torch::Tensor& pred_s, const torch::Tensor& label_s,
                            const torch::Tensor& mask);

// The same over the real local paths only, as one row each ([N]): weight is each row's share,
// 1 / (its trip's local paths * trips), so the sum is LocalPathLoss's mean of means.
torch::Tensor PackedLocalPathLoss(const torch::Tensor& pred_s, const torch::Tensor& label_s,
                                  const torch::Tensor& weight);

class DeepTTEImpl : public torch::nn::Module {
 public:
  DeepTTEImpl(const ModelConfig& config, const data::NormStats& stats);

  // Predicted travel time of each trip in seconds, [B]. Uses the entire estimator only.
  torch::Tensor PredictSeconds(const BatchTensors& batch);
  // The training loss (entire and local estimators), on de-normalised seconds.
  LossParts Loss(const BatchTensors& batch);

  // Xavier-uniform weights and zero biases, as the public code initialises.
  void ResetParameters();

  // The top-level modules, in the order a forward pass first reads their parameters. It is
  // also their registration order, so each is one contiguous run of the parameter layout.
  static const std::vector<std::string>& ForwardBlocks();
  // gate(b) runs just before the forward pass first reads block b's parameters, so that
  // weights still arriving can be awaited there, block by block (the parameter-server
  // exchange's pull). Empty: nothing to await.
  void set_block_gate(std::function<void(int)> gate) { gate_ = std::move(gate); }

  // Where the parameters live (the model is moved as a whole: module->to(device)).
  torch::Device device() const { return parameters().front().device(); }
  const ModelConfig& config() const { return config_; }
  const data::NormStats& stats() const { return stats_; }
  // Batches made for this model pad their sequences to a multiple of this (data::MakeBatch):
  // the same predictions, fewer distinct shapes. Not part of the model's state.
  int64_t pad_multiple() const { return pad_multiple_; }
  void set_pad_multiple(int64_t n) { pad_multiple_ = std::max<int64_t>(1, n); }
  // On the CPU, our kernels (the default: the LSTM of cpu_lstm.h, the attention of
  // packed_attention.h, the estimators of fused_mlp.h, the lookups of cpu_embedding.h) or
  // LibTorch's operators: the same model and results to float rounding; the switch is for
  // comparisons. Not part of the model's state.
  void set_fused_cpu_kernels(bool on) {
    attr_net_->set_fused_cpu(on);
    spatio_temporal_->set_fused_cpu(on);
    entire_estimate_->set_fused_cpu(on);
    local_estimate_->set_fused_cpu(on);
  }

 private:
  struct Outputs {
    torch::Tensor entire;  // [B] normalised
    SpatioTemporalOut sptm;
  };
  Outputs Run(const BatchTensors& batch);
  // Normalisation of a local path's value, whose stats span kernel_size - 1 hops.
  double LocalScale(double per_hop) const { return (config_.kernel_size - 1) * per_hop; }
  void Gate(int block) {
    if (gate_) gate_(block);
  }

  ModelConfig config_;
  data::NormStats stats_;
  int64_t pad_multiple_ = 1;
  AttrNet attr_net_{nullptr};
  SpatioTemporal spatio_temporal_{nullptr};
  EntireEstimator entire_estimate_{nullptr};
  LocalEstimator local_estimate_{nullptr};
  std::function<void(int)> gate_;
};
TORCH_MODULE(DeepTTE);

}  // namespace tteps::deeptte
