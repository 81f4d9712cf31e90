// LibTorch's Adam and SGD in fewer passes. On a GPU with multi-tensor ("foreach") kernels: a
// handful of kernel launches per step instead of about eight per parameter tensor, as PyTorch's
// optimizers do by default on CUDA. On the CPU (float parameters) one pass over each tensor
// with the parameter servers' kernels (common/optimizer_kernels.h) instead of about six. Same
// options, same arithmetic: on the CPU the results equal torch::optim bit for bit
// (multi_tensor_optimizer_test). Weight decay and AMSGrad are not offered by tteps' flags and
// are refused. The state is kept here, not in the base class's state map.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace tteps {

// An optimizer that steps on its parameters' gradients times a factor, as if they had been
// multiplied by it in float first (ScaleGradients), without a pass over them to do so: on the CPU
// the factor is applied as the one pass reads them and the gradients are left as they are; on a
// GPU they are multiplied in place first.
class StepsOnScaledGradients {
 public:
  virtual ~StepsOnScaledGradients() = default;
  virtual void StepScaled(double factor) = 0;
};

class MultiTensorAdam : public torch::optim::Adam, public StepsOnScaledGradients {
 public:
  MultiTensorAdam(std::vector<torch::Tensor> params, torch::optim::AdamOptions options);
  torch::Tensor step(LossClosure closure = nullptr) override;
  void StepScaled(double factor) override;

 private:
  void Step(double scale);

  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;  // per parameter; undefined until first grad
  std::vector<int64_t> steps_;
};

class MultiTensorSGD : public torch::optim::SGD, public StepsOnScaledGradients {
 public:
  MultiTensorSGD(std::vector<torch::Tensor> params, torch::optim::SGDOptions options);
  torch::Tensor step(LossClosure closure = nullptr) override;
  void StepScaled(double factor) override;

 private:
  void Step(double scale);
  // One pass per parameter with a gradient (all of them float on the CPU).
  void StepOnCpu(const torch::optim::SGDOptions& options, float scale);

  std::vector<torch::Tensor> momentum_;  // per parameter; undefined until first grad
};

}  // namespace tteps
