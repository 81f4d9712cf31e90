// The model on a CUDA GPU against the same model on the CPU. CTest label "gpu": on a machine
// without CUDA every test skips, saying why (tests/unit/model/device_test.cc covers that side).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>

#include "model/data/padded_batch.h"
#include "model/deeptte/checkpoint.h"
#include "model/device.h"
#include "model/evaluator.h"
#include "model/model_params.h"
#include "tests/cuda_skip.h"
#include "tests/unit/model/deeptte/test_trips.h"
#include "tests/unit/worker/optimizer_pair.h"
#include "worker/exchange/gradient_hooks.h"
#include "worker/gradient_step.h"
#include "worker/multi_tensor_optimizer.h"

namespace tteps {
namespace {

using testing_util::SampleStats;
using testing_util::SampleTrips;

// The same initial weights on `device` (initialised on the CPU from the seed, then moved).
deeptte::DeepTTE ModelOn(torch::Device device) {
  torch::manual_seed(7);
  deeptte::DeepTTE model(deeptte::ModelConfig{}, SampleStats());
  model->to(device);
  return model;
}

std::vector<size_t> FirstTrips(size_t n) {
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  return idx;
}

std::vector<float> Grads(const deeptte::DeepTTE& model) {
  const auto layout = LayoutOf(*model);
  std::vector<float> flat(layout.total());
  CopyGradsOut(*model, layout, flat.data());
  return flat;
}

double MaxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0, max = 0;
  for (float v : a) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < a.size(); ++i) max = std::max(max, double(std::abs(a[i] - b[i])));
  return max / std::max(scale, 1e-30);
}

TEST(Gpu, ForwardAndBackwardOnCudaEqualCpu) {
  TTEPS_SKIP_WITHOUT_CUDA();
  // cuDNN's convolution and LSTM run in TF32 by default (1.2e-4 off the CPU on an H100); the
  // comparison is of float32 against float32, as --deterministic runs.
  at::globalContext().setAllowTF32CuDNN(false);
  auto cpu = ModelOn(torch::kCPU);
  auto gpu = ModelOn(torch::Device(torch::kCUDA, 0));
  const auto idx = FirstTrips(64);
  const auto a = AccumulateGradients(*cpu, SampleTrips(), idx);
  const auto b = AccumulateGradients(*gpu, SampleTrips(), idx);
  // Float32 kernels sum in other orders on the GPU (cuDNN's LSTM, reductions): close, not equal.
  EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-4 * std::abs(a.loss_sum));
  const double rel = MaxRelDiff(Grads(cpu), Grads(gpu));
  std::printf("cuda vs cpu: loss %.9g vs %.9g, max gradient diff / max |gradient| = %g\n",
              a.loss_sum, b.loss_sum, rel);
  EXPECT_LT(rel, 1e-4);
}

TEST(Gpu, GradientHooksWriteTheGpuGradientsToTheHostBuffer) {
  TTEPS_SKIP_WITHOUT_CUDA();
  auto gpu = ModelOn(torch::Device(torch::kCUDA, 0));
  const auto layout = LayoutOf(*gpu);
  std::vector<float> hooked(layout.total(), -1.f);
  int buckets_done = 0;
  GradientHooks hooks(*gpu, layout, PlanBuckets(layout, 64 * 1024), [&](int) { ++buckets_done; });
  // Two micro-batches: the second backward's hooks add the first one's .grad on the device.
  AccumulateGradients(*gpu, SampleTrips(), FirstTrips(16));
  hooks.Arm(hooked.data());
  std::vector<size_t> second;
  for (size_t i = 16; i < 48; ++i) second.push_back(i);
  AccumulateGradients(*gpu, SampleTrips(), second);
  hooks.Finish();
  EXPECT_EQ(buckets_done, static_cast<int>(hooks.buckets().size()));
  EXPECT_LT(MaxRelDiff(Grads(gpu), hooked), 1e-6);
}

TEST(Gpu, EvaluationOnCudaEqualsCpu) {
  TTEPS_SKIP_WITHOUT_CUDA();
  auto cpu = ModelOn(torch::kCPU);
  auto gpu = ModelOn(torch::Device(torch::kCUDA, 0));
  const auto a = Evaluate(*cpu, SampleTrips(), 256, true);
  const auto b = Evaluate(*gpu, SampleTrips(), 256, true);
  EXPECT_EQ(a.n, b.n);
  EXPECT_NEAR(a.mape, b.mape, 1e-5);
  ASSERT_EQ(a.predictions.size(), b.predictions.size());
}

TEST(Gpu, CheckpointWrittenOnGpuLoadsOnCpu) {
  TTEPS_SKIP_WITHOUT_CUDA();
  auto gpu = ModelOn(torch::Device(torch::kCUDA, 0));
  const std::string path = ::testing::TempDir() + "/tteps_gpu_model.pt";
  deeptte::SaveModel(gpu, path);
  auto loaded = deeptte::LoadModel(path);  // onto the CPU
  EXPECT_TRUE(loaded->device().is_cpu());
  const auto layout = LayoutOf(*gpu);
  std::vector<float> a(layout.total()), b(layout.total());
  CopyParamsOut(*gpu, layout, a.data());
  CopyParamsOut(*loaded, layout, b.data());
  EXPECT_EQ(a, b);
  std::filesystem::remove(path);
}

TEST(Gpu, ABatchCopiedToTheGpuHoldsTheCpusValues) {
  TTEPS_SKIP_WITHOUT_CUDA();
  const auto batch = data::MakeBatch(SampleTrips(), FirstTrips(37), SampleStats());
  for (torch::Dtype dtype : {torch::kFloat, torch::kDouble}) {
    const auto cpu = deeptte::ToTensors(batch, dtype, torch::kCPU);
    const auto gpu = deeptte::ToTensors(batch, dtype, torch::Device(torch::kCUDA, 0));
    EXPECT_EQ(gpu.min_length, cpu.min_length);
    const std::vector<std::pair<torch::Tensor, torch::Tensor>> fields = {
        {cpu.driver_id, gpu.driver_id}, {cpu.week_id, gpu.week_id}, {cpu.time_id, gpu.time_id},
        {cpu.dist, gpu.dist},           {cpu.label, gpu.label},     {cpu.lngs, gpu.lngs},
        {cpu.lats, gpu.lats},           {cpu.states, gpu.states},   {cpu.time_gap, gpu.time_gap},
        {cpu.dist_gap, gpu.dist_gap},   {cpu.lengths, gpu.lengths}};
    for (size_t i = 0; i < fields.size(); ++i) {
      EXPECT_TRUE(fields[i].second.is_cuda()) << i;
      EXPECT_TRUE(torch::equal(fields[i].first, fields[i].second.cpu())) << "field " << i;
    }
  }
}

TEST(Gpu, MultiTensorOptimizersOnCudaEqualLibTorchsOnCuda) {
  TTEPS_SKIP_WITHOUT_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  const auto adam = torch::optim::AdamOptions(0.01);
  const auto [a, b] = testing_util::StepBoth<MultiTensorAdam, torch::optim::Adam>(adam, cuda);
  const auto sgd = torch::optim::SGDOptions(0.05).momentum(0.9);
  const auto [c, d] = testing_util::StepBoth<MultiTensorSGD, torch::optim::SGD>(sgd, cuda);
  // The foreach kernels may contract multiply-adds differently from the per-tensor ones.
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-6, 1e-7)) << "adam, tensor " << i;
    EXPECT_TRUE(torch::allclose(c[i], d[i], 1e-6, 1e-7)) << "sgd, tensor " << i;
  }
}

}  // namespace
}  // namespace tteps
