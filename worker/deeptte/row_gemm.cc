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
  // In 8 x 8 tiles through a local copy, so that the reads and the writes both run along rows
  // of 8 (512 x 128: 30 us against 50 in 16 x 16 blocks copied element by element).
  constexpr int64_t kTile = 8;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t nr = rows - r0 < kTile ? rows - r0 : kTile;
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t nc = cols - c0 < kTile ? cols - c0 : kTile;
      if (nr == kTile && nc == kTile) {
        float tile[kTile][kTile];
        for (int64_t i = 0; i < kTile; ++i) {
          for (int64_t j = 0; j < kTile; ++j) tile[j][i] = src[(r0 + i) * cols + c0 + j];
        }
        for (int64_t j = 0; j < kTile; ++j) {
          for (int64_t i = 0; i < kTile; ++i) dst[(c0 + j) * rows + r0 + i] = tile[j][i];
        }
      } else {
        for (int64_t i = 0; i < nr; ++i) {
          for (int64_t j = 0; j < nc; ++j)
            dst[(c0 + j) * rows + r0 + i] = src[(r0 + i) * cols + c0 + j];
        }
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
