// The CPU LSTM (cpu_lstm.h) against LibTorch's: outputs and gradients, on random padded batches
// and through the whole model on real ones, to 1e-5 of the largest value of each tensor; and its
// tensor products (tensor_gemm.h) against LibTorch's mm.
#include "model/deeptte/cpu_lstm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <numeric>

#include "model/data/padded_batch.h"
#include "model/deeptte/deeptte.h"
#include "model/deeptte/tensor_gemm.h"
#include "tests/unit/model/deeptte/test_trips.h"

namespace tteps {
namespace {

// max |got - want| over max |want|: a tensor's error relative to its own scale.
double Relative(const torch::Tensor& got, const torch::Tensor& want) {
  const double scale = want.abs().max().item<double>();
  return (got - want).abs().max().item<double>() / std::max(scale, 1e-30);
}

// Mm and AddMm (tensor_gemm.h) against LibTorch's mm: every transposition, narrowed operands.
TEST(TensorGemm, EqualsLibTorchsProducts) {
  torch::manual_seed(4);
  const int64_t m = 21, n = 13, k = 9, pad = 3;
  for (int trans = 0; trans < 4; ++trans) {
    const bool ta = trans & 1, tb = trans & 2;
    SCOPED_TRACE(std::to_string(trans));
    const auto a = torch::randn({ta ? k : m, (ta ? m : k) + pad});
    const auto b = torch::randn({tb ? n : k, (tb ? k : n) + pad});
    const auto pa = a.narrow(1, 0, ta ? m : k), pb = b.narrow(1, 0, tb ? k : n);
    const auto product = torch::mm(ta ? pa.t() : pa, tb ? pb.t() : pb);
    EXPECT_LT(Relative(deeptte::Mm(pa, ta, pb, tb), product), 1e-6);
    const auto bias = torch::randn({n});
    EXPECT_LT(Relative(deeptte::AddMm(bias, pa, ta, pb, tb), product + bias), 1e-6);
  }
}

struct LstmRun {
  torch::Tensor out, d_steps, d_trip;  // the gradients of the per-step and per-trip inputs
  std::vector<torch::Tensor> d_params;
};

// Outputs at the real steps (zero elsewhere), and the gradients of a weighted sum of them.
LstmRun RunLstm(torch::nn::LSTM& rnn, const torch::Tensor& inputs, const torch::Tensor& lengths,
                const torch::Tensor& weights, bool ours, int64_t data_cols = 0) {
  rnn->zero_grad();
  auto x = inputs.clone().requires_grad_(true);
  const auto mask =
      (torch::arange(inputs.size(1)).unsqueeze(0) < lengths.unsqueeze(1)).unsqueeze(2);
  // Ours takes the last 5 input columns as the trip's own (as the model's attributes): those of
  // step 0, the same at every step here.
  auto per_trip = x.select(1, 0).slice(1, x.size(2) - 5);
  auto out = ours
                 ? deeptte::CpuLstm(rnn, x.slice(2, 0, x.size(2) - 5), per_trip, lengths, data_cols)
                 : std::get<0>(rnn->forward(x));
  out = out.masked_fill(mask.logical_not(), 0.0);
  (out * weights).sum().backward();
  const int64_t p = x.size(2) - 5;
  LstmRun r{out.detach(), x.grad().slice(2, 0, p), x.grad().slice(2, p).sum(1), {}};
  for (const auto& p : rnn->parameters()) r.d_params.push_back(p.grad().clone());
  return r;
}

TEST(CpuLstm, OutputsAndGradientsEqualLibTorchsOnAPaddedBatch) {
  torch::manual_seed(5);
  torch::nn::LSTM rnn(torch::nn::LSTMOptions(61, 128).num_layers(2).batch_first(true));
  // Unsorted lengths, ties, a trip of one step and padding past the longest trip.
  const auto lengths = torch::tensor({12, 3, 7, 1, 12, 5, 9}, torch::kLong);
  auto inputs = torch::randn({7, 14, 61});
  // The last 5 columns the same at every step of a trip (ours takes them once per trip).
  inputs.slice(2, 56).copy_(inputs.select(1, 0).slice(1, 56).unsqueeze(1).expand({7, 14, 5}));
  const auto weights = torch::randn({7, 14, 128});
  const LstmRun ours = RunLstm(rnn, inputs, lengths, weights, true);
  const LstmRun theirs = RunLstm(rnn, inputs, lengths, weights, false);
  EXPECT_LT(Relative(ours.out, theirs.out), 1e-5);
  EXPECT_LT(Relative(ours.d_steps, theirs.d_steps), 1e-5);
  EXPECT_LT(Relative(ours.d_trip, theirs.d_trip), 1e-5);
  // Padded inputs change nothing, so their gradient is exactly zero in both.
  EXPECT_EQ(ours.d_steps[1].slice(0, 3).abs().max().item<float>(), 0.0f);
  ASSERT_EQ(ours.d_params.size(), 8u);
  for (size_t i = 0; i < ours.d_params.size(); ++i) {
    EXPECT_LT(Relative(ours.d_params[i], theirs.d_params[i]), 1e-5) << "parameter " << i;
  }
  // The same inputs give the same bits again (--deterministic).
  const LstmRun again = RunLstm(rnn, inputs, lengths, weights, true);
  EXPECT_TRUE(torch::equal(again.out, ours.out));
  EXPECT_TRUE(torch::equal(again.d_params[1], ours.d_params[1]));

  // With the last 2 per-step columns taken as data (no gradient wanted): the same outputs and
  // parameters' gradients; the other columns' gradients LibTorch's (the product's rounding may
  // differ with its width), those 2 zero.
  const LstmRun data = RunLstm(rnn, inputs, lengths, weights, true, /*data_cols=*/2);
  EXPECT_TRUE(torch::equal(data.out, ours.out));
  const int64_t wanted = ours.d_steps.size(2) - 2;
  EXPECT_LT(Relative(data.d_steps.slice(2, 0, wanted), theirs.d_steps.slice(2, 0, wanted)), 1e-5);
  EXPECT_GT(ours.d_steps.slice(2, wanted).abs().max().item<float>(), 0.0f);
  EXPECT_EQ(data.d_steps.slice(2, wanted).abs().max().item<float>(), 0.0f);
  EXPECT_TRUE(torch::equal(data.d_trip, ours.d_trip));
  for (size_t i = 0; i < ours.d_params.size(); ++i) {
    EXPECT_TRUE(torch::equal(data.d_params[i], ours.d_params[i])) << "parameter " << i;
  }
}

// The model's loss and every parameter's gradient with either LSTM, on real batches: mixed
// lengths, and one larger than the 64 trips LibTorch's path groups by. Ours hands its outputs on
// packed (the attention or mean pooling and the local loss over the real steps' rows only);
// LibTorch's padded, with masks.
TEST(CpuLstm, TheModelsLossAndGradientsEqualThoseWithLibTorchsLstm) {
  using testing_util::SampleStats;
  using testing_util::SampleTrips;
  for (const std::string pooling : {"attention", "mean"})
    for (const size_t size : {5, 150}) {
      SCOPED_TRACE(pooling);
      std::vector<size_t> idx(size);
      std::iota(idx.begin(), idx.end(), size_t{300});
      const auto batch =
          deeptte::ToTensors(data::MakeBatch(SampleTrips(), idx, SampleStats()), torch::kFloat);
      torch::manual_seed(7);
      deeptte::ModelConfig config;
      config.pooling = pooling;
      deeptte::DeepTTE model(config, SampleStats());
      std::vector<torch::Tensor> grads[2];
      double loss[2];
      for (int ours = 0; ours < 2; ++ours) {
        model->set_fused_cpu_kernels(ours == 1);
        model->zero_grad();
        auto l = model->Loss(batch).total;
        l.backward();
        loss[ours] = l.item<double>();
        for (const auto& p : model->parameters()) grads[ours].push_back(p.grad().clone());
      }
      EXPECT_NEAR(loss[1], loss[0], 1e-5 * loss[0]) << size << " trips";
      const auto names = model->named_parameters().keys();
      for (size_t i = 0; i < names.size(); ++i) {
        EXPECT_LT(Relative(grads[1][i], grads[0][i]), 1e-5) << names[i] << ", " << size << " trips";
      }
    }
}

}  // namespace
}  // namespace tteps
