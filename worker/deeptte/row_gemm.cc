#include "worker/deeptte/row_gemm.h"

#ifdef TTEPS_HAVE_BLAS
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c, const int* ldc);
#endif

namespace tteps::deeptte {

void RowGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef TTEPS_HAVE_BLAS
  // Column-major BLAS sees the row-major C as C^T = op(B)^T op(A)^T, as LibTorch hands it over.
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ia = static_cast<int>(lda), ib = static_cast<int>(ldb), ic = static_cast<int>(ldc);
  // In blocks of kRowBlock rows: OpenBLAS multiplies a few rows in its small-matrix kernel
  // without packing, at the core's peak (110 GFLOP/s at 8 rows by 128 x 512 here), where its
  // general kernel reached 64 at 16 rows and 90 at 64.
  constexpr int kRowBlock = 8;
  for (int i = 0; i < im; i += kRowBlock) {
    const int rows = im - i < kRowBlock ? im - i : kRowBlock;
    const float* ai = trans_a ? a + i : a + static_cast<int64_t>(i) * lda;
    sgemm_(&tb, &ta, &in, &rows, &ik, &alpha, b, &ib, ai, &ia, &beta, c + i * ldc, &ic);
  }
#else
  RowGemmWithTorch(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

void Transpose(const float* src, int64_t rows, int64_t cols, float* dst) {
  constexpr int64_t kBlock = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t r1 = r0 + kBlock < rows ? r0 + kBlock : rows;
      const int64_t c1 = c0 + kBlock < cols ? c0 + kBlock : cols;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
      }
    }
  }
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef TTEPS_HAVE_BLAS
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ia = static_cast<int>(lda), ib = static_cast<int>(ldb), ic = static_cast<int>(ldc);
  sgemm_(&tb, &ta, &in, &im, &ik, &alpha, b, &ib, a, &ia, &beta, c, &ic);
#else
  RowGemmWithTorch(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

bool RowGemmCallsBlas() {
#ifdef TTEPS_HAVE_BLAS
  return true;
#else
  return false;
#endif
}

}  // namespace tteps::deeptte
