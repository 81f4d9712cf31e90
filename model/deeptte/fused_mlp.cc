#include "model/deeptte/fused_mlp.h"

#include <cstring>
#include <vector>

#include "model/deeptte/gemm.h"
#include "model/deeptte/tensor_gemm.h"

namespace tteps::deeptte {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr float kLeakySlope = 0.01f;  // torch::leaky_relu's default
constexpr int64_t kLeaky = 1, kResidual = 2;

// out = act(z) (+ a): leaky ReLU or none, with the residual addition or not. One loop per case
// over restrict pointers, so that they vectorise; the file is built with -fno-trapping-math
// (worker/CMakeLists.txt), without which GCC keeps a product in one branch a branch, one float
// at a time.
void Activate(const float* __restrict z, const float* __restrict a, int64_t n, bool leaky,
              bool residual, float* __restrict out) {
  if (leaky && residual) {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + (z[i] > 0 ? z[i] : z[i] * kLeakySlope);
  } else if (leaky) {
    for (int64_t i = 0; i < n; ++i) out[i] = z[i] > 0 ? z[i] : z[i] * kLeakySlope;
  } else if (residual) {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + z[i];
  } else {
    std::memcpy(out, z, n * sizeof(float));
  }
}

// dz = dy * leaky_relu'(z).
void LeakySlopes(const float* __restrict z, const float* __restrict dy, int64_t n,
                 float* __restrict dz) {
  for (int64_t i = 0; i < n; ++i) dz[i] = z[i] > 0 ? dy[i] : dy[i] * kLeakySlope;
}

// One layer: y = act(a W^T + b), output y or a + y.
struct LinearNode : public torch::autograd::Function<LinearNode> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               int64_t kind) {
    const auto a = input.contiguous(), w = weight.contiguous(), b = bias.contiguous();
    auto z = AddMm(b, a, false, w, true);  // b + a W^T
    auto next = torch::empty_like(z);
    Activate(z.data_ptr<float>(), a.data_ptr<float>(), z.numel(), kind & kLeaky, kind & kResidual,
             next.data_ptr<float>());
    ctx->save_for_backward({a, w, z});
    ctx->saved_data["kind"] = kind;
    return next;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    // No gradient reaches the output (it fed nothing that was differentiated): none leaves.
    if (!grad_out[0].defined())
      return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    const auto saved = ctx->get_saved_variables();
    const auto &a = saved[0], &w = saved[1], &z = saved[2];
    const int64_t kind = ctx->saved_data["kind"].toInt();
    const int64_t rows = a.size(0), out = w.size(0), in = w.size(1);
    const bool leaky = kind & kLeaky, residual = kind & kResidual;
    const auto da = grad_out[0].contiguous();
    torch::Tensor dz = da;
    if (leaky) {
      dz = torch::empty_like(z);
      LeakySlopes(z.data_ptr<float>(), da.data_ptr<float>(), rows * out, dz.data_ptr<float>());
    }
    const float* dzp = dz.data_ptr<float>();
    auto dw = torch::empty_like(w);
    gemm::Multiply(true, false, out, in, rows, dzp, out, a.data_ptr<float>(), in,
                   dw.data_ptr<float>(), in, /*accumulate=*/false);
    auto db = torch::zeros({out}, w.options());
    float* dbp = db.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < out; ++j) dbp[j] += dzp[r * out + j];
    }
    // The input's gradient: through the product, and straight through a residual addition.
    auto d_input = residual ? da.clone() : torch::empty({rows, in}, w.options());
    gemm::Multiply(false, false, rows, in, out, dzp, out, w.data_ptr<float>(), in,
                   d_input.data_ptr<float>(), in, /*accumulate=*/residual);
    return {d_input, dw, db, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor FusedMlp(const torch::Tensor& x, const std::vector<MlpLayer>& layers) {
  TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat && x.dim() == 2,
              "FusedMlp takes [N, in] floats on the CPU");
  torch::Tensor a = x;
  for (const auto& l : layers) {
    TORCH_CHECK(l.weight.dim() == 2 && l.weight.size(1) == a.size(1) &&
                    l.bias.numel() == l.weight.size(0) &&
                    (!l.residual || l.weight.size(0) == a.size(1)),
                "FusedMlp: layer shapes do not chain");
    a = LinearNode::apply(a, l.weight, l.bias,
                          (l.leaky ? kLeaky : 0) | (l.residual ? kResidual : 0));
  }
  return a;
}

}  // namespace tteps::deeptte
