#include <torch/torch.h>

#include "worker/deeptte/row_gemm.h"

namespace tteps::deeptte {

void RowGemmWithTorch(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const auto view = [](const float* p, int64_t rows, int64_t cols, int64_t ld, bool trans) {
    auto t = torch::from_blob(const_cast<float*>(p), {trans ? cols : rows, trans ? rows : cols},
                              {ld, 1}, torch::kFloat);
    return trans ? t.t() : t;
  };
  auto out = torch::from_blob(c, {m, n}, {ldc, 1}, torch::kFloat);
  const auto pa = view(a, m, k, lda, trans_a), pb = view(b, k, n, ldb, trans_b);
  if (beta == 0) {
    at::mm_out(out, pa, pb);
    if (alpha != 1) out.mul_(alpha);
  } else {
    out.addmm_(pa, pb, beta, alpha);
  }
}

}  // namespace tteps::deeptte
