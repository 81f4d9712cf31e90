#include "model/deeptte/deeptte.h"

namespace tteps::deeptte {

// Added to the local label in the local loss's denominator, as in the public code.
constexpr double kLocalEpsSeconds = 10.0;

torch::Tensor LocalPathLoss(const torch::Tensor& pred_s, const torch::Tensor& label_s,
                            const torch::Tensor& mask) {
  // Padded steps get label 0 so that their masked-out terms stay finite in the backward pass.
  auto label = label_s.masked_fill(mask.logical_not(), 0.0);
  auto per_path =
      ((pred_s - label).abs() / (label + kLocalEpsSeconds)).masked_fill(mask.logical_not(), 0.0);
  // Mean over each trip's local paths, then over trips: every term of the loss is a mean over
  // trips, so sample-weighted averaging of gradients across workers equals the union batch.
  auto per_trip = per_path.sum(1) / mask.sum(1).to(per_path.scalar_type());
  return per_trip.mean();
}

torch::Tensor PackedLocalPathLoss(const torch::Tensor& pred_s, const torch::Tensor& label_s,
                                  const torch::Tensor& weight) {
  return ((pred_s - label_s).abs() / (label_s + kLocalEpsSeconds) * weight).sum();
}

const std::vector<std::string>& DeepTTEImpl::ForwardBlocks() {
  static const std::vector<std::string> blocks = {"attr_net", "spatio_temporal", "entire_estimate",
                                                  "local_estimate"};
  return blocks;
}

DeepTTEImpl::DeepTTEImpl(const ModelConfig& config, const data::NormStats& stats)
    : config_(config), stats_(stats) {
  config_.Validate();
  attr_net_ = register_module("attr_net", AttrNet());
  spatio_temporal_ = register_module(
      "spatio_temporal", SpatioTemporal(config_.kernel_size, config_.num_filter, config_.pooling));
  entire_estimate_ = register_module(
      "entire_estimate",
      EntireEstimator(kAttrSize + kHiddenSize, config_.num_final_fcs, config_.final_fc_size));
  local_estimate_ = register_module("local_estimate", LocalEstimator(kHiddenSize));
  ResetParameters();
}

void DeepTTEImpl::ResetParameters() {
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    const std::string leaf = name.substr(name.find_last_of('.') + 1);
    if (leaf.rfind("bias", 0) == 0) {
      p.value().zero_();
    } else {
      torch::nn::init::xavier_uniform_(p.value());
    }
  }
}

DeepTTEImpl::Outputs DeepTTEImpl::Run(const BatchTensors& b) {
  // The host's figure where the batch brought one: reading the tensor waits for the GPU.
  const int64_t shortest = b.min_length >= 0 ? b.min_length : b.lengths.min().item<int64_t>();
  TORCH_CHECK(shortest >= config_.kernel_size, "every trip needs at least kernel_size points");
  // Length of each local path in km, normalised once with the per-hop statistics.
  auto local_dist =
      (LocalPathDelta(b.dist_gap, config_.kernel_size) - LocalScale(stats_.dist_gap_mean)) /
      LocalScale(stats_.dist_gap_std);
  Gate(0);
  auto attr = attr_net_(b);
  Outputs out;
  Gate(1);
  out.sptm = spatio_temporal_(b, attr, local_dist);
  Gate(2);
  out.entire = entire_estimate_(torch::cat({attr, out.sptm.pooled}, 1));
  return out;
}

torch::Tensor DeepTTEImpl::PredictSeconds(const BatchTensors& b) {
  return Run(b).entire * stats_.time_std + stats_.time_mean;
}

LossParts DeepTTEImpl::Loss(const BatchTensors& b) {
  auto out = Run(b);
  LossParts loss;
  auto pred = out.entire * stats_.time_std + stats_.time_mean;
  loss.entire = ((pred - b.label).abs() / b.label).mean();

  // Local labels: the seconds spent on each local path, from the raw time gaps.
  auto label = LocalPathDelta(b.time_gap, config_.kernel_size);
  Gate(3);
  const auto& sptm = out.sptm;
  auto local_pred = local_estimate_(sptm.is_packed() ? sptm.packed.rows : sptm.hiddens) *
                        LocalScale(stats_.time_gap_std) +
                    LocalScale(stats_.time_gap_mean);
  if (sptm.is_packed()) {
    // Each trip's paths weigh 1 / (its paths * trips): the mean over its paths, then over trips.
    const auto lengths = sptm.local_lengths.to(local_pred.scalar_type());
    const auto weight = (1.0 / (lengths * lengths.size(0))).index_select(0, sptm.packed.trip);
    loss.local = PackedLocalPathLoss(
        local_pred, label.reshape(-1).index_select(0, sptm.packed.padded_index), weight);
  } else {
    loss.local = LocalPathLoss(local_pred, label, sptm.mask);
  }
  loss.total =
      (1.0 - config_.local_loss_weight) * loss.entire + config_.local_loss_weight * loss.local;
  return loss;
}

}  // namespace tteps::deeptte
