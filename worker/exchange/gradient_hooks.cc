#include "worker/exchange/gradient_hooks.h"

namespace tteps {

GradientHooks::GradientHooks(torch::nn::Module& model, const ParamLayout& layout,
                             std::vector<Bucket> buckets, std::function<void(int)> on_bucket)
    : layout_(layout),
      params_(model.parameters()),
      tracker_(std::move(buckets), static_cast<int>(layout.entries().size())),
      on_bucket_(std::move(on_bucket)) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const int entry = static_cast<int>(i);
    // The hook sees this backward's gradient before it is added to .grad (the earlier
    // micro-batches' sum): Write adds them, as the accumulation will.
    handles_.push_back(params_[i].register_hook([this, entry](const at::Tensor& g) {
      if (armed_) Write(entry, &g);
    }));
  }
}

GradientHooks::~GradientHooks() {
  for (size_t i = 0; i < handles_.size(); ++i) params_[i].remove_hook(handles_[i]);
}

void GradientHooks::Arm(float* flat) {
  flat_ = flat;
  tracker_.Reset();
  armed_ = true;
}

void GradientHooks::Finish() {
  armed_ = false;
  for (int e = 0; e < static_cast<int>(params_.size()); ++e) {
    if (!tracker_.IsReady(e)) Write(e, nullptr);
  }
}

void GradientHooks::Write(int entry, const at::Tensor* incoming) {
  const ParamEntry& e = layout_.entries()[entry];
  {
    torch::NoGradGuard no_grad;
    auto dst = torch::from_blob(flat_ + e.offset, {e.numel}, torch::kFloat);
    const at::Tensor& sofar = params_[entry].grad();
    if (sofar.defined() && incoming && sofar.device().is_cpu()) {
      torch::add_out(dst, sofar.reshape({-1}), incoming->reshape({-1}));
    } else if (sofar.defined() && incoming) {
      dst.copy_((sofar + *incoming).reshape({-1}));  // summed on the GPU, then one copy out
    } else if (sofar.defined() || incoming) {
      dst.copy_((incoming ? *incoming : sofar).reshape({-1}));
    } else {
      dst.zero_();
    }
  }
  for (int b : tracker_.MarkReady(entry)) on_bucket_(b);
}

}  // namespace tteps
