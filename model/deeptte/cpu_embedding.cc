#include "model/deeptte/cpu_embedding.h"

#include <cstring>

namespace tteps::deeptte {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct EmbeddingNode : public torch::autograd::Function<EmbeddingNode> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& weight,
                               const torch::Tensor& indices) {
    const auto w = weight.contiguous(), idx = indices.contiguous();
    const int64_t rows = w.size(0), dim = w.size(1), n = idx.numel();
    const int64_t* ip = idx.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      TORCH_CHECK(ip[i] >= 0 && ip[i] < rows, "embedding index ", ip[i], " out of range [0, ", rows,
                  ")");
    }
    auto shape = idx.sizes().vec();
    shape.push_back(dim);
    auto out = torch::empty(shape, w.options());
    const float* src = w.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(dst + i * dim, src + ip[i] * dim, dim * sizeof(float));
    }
    ctx->save_for_backward({idx});
    ctx->saved_data["rows"] = rows;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    if (!grad_out[0].defined()) return {torch::Tensor(), torch::Tensor()};
    const auto idx = ctx->get_saved_variables()[0];
    const auto g = grad_out[0].contiguous();
    const int64_t dim = g.size(-1), n = idx.numel();
    auto dw = torch::zeros({ctx->saved_data["rows"].toInt(), dim}, g.options());
    const int64_t* ip = idx.data_ptr<int64_t>();
    const float* gp = g.data_ptr<float>();
    float* d = dw.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      float* row = d + ip[i] * dim;
      const float* from = gp + i * dim;
      for (int64_t j = 0; j < dim; ++j) row[j] += from[j];
    }
    return {dw, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor CpuEmbedding(const torch::Tensor& weight, const torch::Tensor& indices) {
  TORCH_CHECK(weight.device().is_cpu() && weight.scalar_type() == torch::kFloat &&
                  weight.dim() == 2 && indices.scalar_type() == torch::kLong,
              "CpuEmbedding takes a float [N, D] table on the CPU and int64 indices");
  return EmbeddingNode::apply(weight, indices);
}

torch::Tensor Embed(torch::nn::Embedding& table, const torch::Tensor& indices, bool fused) {
  const auto& o = table->options;
  const auto& w = table->weight;
  if (fused && w.device().is_cpu() && w.scalar_type() == torch::kFloat &&
      indices.scalar_type() == torch::kLong && !o.padding_idx() && !o.max_norm() && !o.sparse()) {
    return CpuEmbedding(w, indices);
  }
  return table(indices);
}

}  // namespace tteps::deeptte
