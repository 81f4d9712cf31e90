// The CPU embedding lookup (cpu_embedding.h) against LibTorch's: rows and gradients bit for bit,
// repeated indices included; an index out of range is refused.
#include "model/deeptte/cpu_embedding.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tteps {
namespace {

TEST(CpuEmbedding, RowsAndGradientsEqualLibTorchsBitForBit) {
  torch::manual_seed(3);
  torch::nn::Embedding table(9, 5);
  // Two dimensions, every row of the table at least once and some many times.
  const auto indices = torch::randint(0, 9, {7, 40}, torch::kLong);
  const auto weights = torch::randn({7, 40, 5});
  torch::Tensor out[2], grad[2];
  for (int fused = 0; fused < 2; ++fused) {
    table->zero_grad();
    out[fused] = deeptte::Embed(table, indices, fused == 1);
    (out[fused] * weights).sum().backward();
    grad[fused] = table->weight.grad().clone();
  }
  EXPECT_EQ(out[1].sizes(), out[0].sizes());
  EXPECT_TRUE(torch::equal(out[1], out[0]));
  EXPECT_TRUE(torch::equal(grad[1], grad[0]));
  EXPECT_GT(grad[1].abs().min().item<float>(), 0.0f);  // every row got a gradient
}

TEST(CpuEmbedding, AnIndexOutOfRangeIsRefused) {
  torch::nn::Embedding table(4, 2);
  for (const int64_t bad : {4, -1}) {
    try {
      deeptte::CpuEmbedding(table->weight, torch::tensor({int64_t{0}, bad}));
      ADD_FAILURE() << bad << " was accepted";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tteps
