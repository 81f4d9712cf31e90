#include "model/deeptte/tensor_gemm.h"

#include <cstring>

#include "model/deeptte/gemm.h"

namespace tteps::deeptte {
namespace {

torch::Tensor RowsContiguous(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 2 && x.device().is_cpu() && x.scalar_type() == torch::kFloat,
              "Mm takes 2-d float tensors on the CPU");
  return x.stride(1) == 1 && x.stride(0) >= x.size(1) ? x : x.contiguous();
}

// out (already holding the bias rows, or not) = [out +] op(a) op(b).
torch::Tensor Product(torch::Tensor out, const torch::Tensor& a_in, bool trans_a,
                      const torch::Tensor& b_in, bool trans_b, bool accumulate) {
  const auto a = RowsContiguous(a_in), b = RowsContiguous(b_in);
  const int64_t m = trans_a ? a.size(1) : a.size(0), k = trans_a ? a.size(0) : a.size(1);
  const int64_t n = trans_b ? b.size(0) : b.size(1);
  TORCH_CHECK((trans_b ? b.size(1) : b.size(0)) == k, "Mm: inner sizes differ");
  gemm::Multiply(trans_a, trans_b, m, n, k, a.data_ptr<float>(), a.stride(0), b.data_ptr<float>(),
                 b.stride(0), out.data_ptr<float>(), n, accumulate);
  return out;
}

}  // namespace

torch::Tensor Mm(const torch::Tensor& a, bool trans_a, const torch::Tensor& b, bool trans_b) {
  const int64_t m = trans_a ? a.size(1) : a.size(0), n = trans_b ? b.size(0) : b.size(1);
  return Product(torch::empty({m, n}, a.options()), a, trans_a, b, trans_b, false);
}

torch::Tensor AddMm(const torch::Tensor& bias, const torch::Tensor& a, bool trans_a,
                    const torch::Tensor& b, bool trans_b) {
  const int64_t m = trans_a ? a.size(1) : a.size(0), n = trans_b ? b.size(0) : b.size(1);
  TORCH_CHECK(bias.numel() == n, "AddMm: one bias per column");
  const auto bias_c = bias.contiguous();
  auto out = torch::empty({m, n}, a.options());
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < m; ++r)
    std::memcpy(o + r * n, bias_c.data_ptr<float>(), n * sizeof(float));
  return Product(out, a, trans_a, b, trans_b, true);
}

}  // namespace tteps::deeptte
