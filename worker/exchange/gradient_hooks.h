// Gradients as backward produces them, for the exchanges that overlap communication with the
// last micro-batch's backward (ring allreduce, sync push parts): a hook on every parameter
// writes its gradient (.grad so far plus this backward's) into a flat buffer laid out by the
// ParamLayout, and hands on each bucket (worker/grad_buckets.h) as it completes, in order.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "model/param_layout.h"
#include "worker/grad_buckets.h"

namespace tteps {

class GradientHooks {
 public:
  // `on_bucket(b)`: bucket b is complete in the flat buffer.
  GradientHooks(torch::nn::Module& model, const ParamLayout& layout, std::vector<Bucket> buckets,
                std::function<void(int bucket)> on_bucket);
  ~GradientHooks();
  GradientHooks(const GradientHooks&) = delete;
  GradientHooks& operator=(const GradientHooks&) = delete;

  // The next backward's gradients go into `flat` (layout.total() floats); nothing is complete.
  void Arm(float* flat);
  // Writes the tensors the backward gave no gradient (an empty slice, an unused parameter) from
  // .grad, or zeros, completing every bucket; the hooks then rest until the next Arm.
  void Finish();
  bool armed() const { return armed_; }
  const std::vector<Bucket>& buckets() const { return tracker_.buckets(); }

 private:
  void Write(int entry, const at::Tensor* incoming);

  const ParamLayout& layout_;
  std::vector<at::Tensor> params_;  // in layout order
  BucketTracker tracker_;
  std::function<void(int)> on_bucket_;
  std::vector<unsigned> handles_;
  float* flat_ = nullptr;
  bool armed_ = false;
};

}  // namespace tteps
