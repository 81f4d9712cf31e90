// The multi-tensor optimizers against LibTorch's: on the CPU bit for bit (gpu_test.cc compares
// them on a GPU).
#include "worker/multi_tensor_optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/unit/worker/optimizer_pair.h"

namespace tteps {
namespace {

using testing_util::StepBoth;

TEST(MultiTensorOptimizer, AdamEqualsLibTorchsAdamBitForBit) {
  const auto o = torch::optim::AdamOptions(0.01).betas(std::make_tuple(0.9, 0.99)).eps(1e-7);
  const auto [ours, theirs] = StepBoth<MultiTensorAdam, torch::optim::Adam>(o, torch::kCPU);
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << i;
}

TEST(MultiTensorOptimizer, SgdWithAndWithoutMomentumEqualsLibTorchsBitForBit) {
  for (double momentum : {0.0, 0.9}) {
    const auto o = torch::optim::SGDOptions(0.05).momentum(momentum);
    const auto [ours, theirs] = StepBoth<MultiTensorSGD, torch::optim::SGD>(o, torch::kCPU);
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "momentum " << momentum << ", tensor " << i;
    }
  }
}

// StepOnScaledGradients's path (the mean of a gradient sum, applied as the one pass reads it).
TEST(MultiTensorOptimizer, AStepOnScaledGradientsEqualsScalingThemFirstBitForBit) {
  const double scale = 1.0 / 7;
  const auto adam = torch::optim::AdamOptions(0.01).betas(std::make_tuple(0.9, 0.99)).eps(1e-7);
  const auto [ours, theirs] =
      StepBoth<MultiTensorAdam, torch::optim::Adam>(adam, torch::kCPU, scale);
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << i;
  for (double momentum : {0.0, 0.9}) {
    const auto o = torch::optim::SGDOptions(0.05).momentum(momentum);
    const auto [ours, theirs] = StepBoth<MultiTensorSGD, torch::optim::SGD>(o, torch::kCPU, scale);
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "momentum " << momentum << ", tensor " << i;
    }
  }
}

TEST(MultiTensorOptimizer, RefusesOptionsItDoesNotImplement) {
  std::vector<torch::Tensor> p = {torch::zeros({2}, torch::requires_grad())};
  EXPECT_THROW(MultiTensorAdam(p, torch::optim::AdamOptions(0.1).weight_decay(0.1)), c10::Error);
  EXPECT_THROW(MultiTensorSGD(p, torch::optim::SGDOptions(0.1).nesterov(true).momentum(0.9)),
               c10::Error);
}

}  // namespace
}  // namespace tteps
