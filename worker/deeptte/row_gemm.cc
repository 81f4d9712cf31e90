#include "worker/deeptte/row_gemm.h"

#ifdef __SSE__
#include <xmmintrin.h>
#endif

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
  // OpenBLAS takes the small-matrix kernel only up to 10^6 multiply-adds a call: wider products
  // (8 rows by 256 x 512) go in blocks of columns (multiples of 16, its kernel's width).
  int col_block = in;
  while (static_cast<double>(kRowBlock) * col_block * ik > 1e6 && col_block > 16) {
    col_block = (col_block / 2 + 15) / 16 * 16;
  }
  for (int i = 0; i < im; i += kRowBlock) {
    const int rows = im - i < kRowBlock ? im - i : kRowBlock;
    const float* ai = trans_a ? a + i : a + static_cast<int64_t>(i) * lda;
    for (int j = 0; j < in; j += col_block) {
      const int cols = in - j < col_block ? in - j : col_block;
      const float* bj = trans_b ? b + static_cast<int64_t>(j) * ldb : b + j;
      sgemm_(&tb, &ta, &cols, &rows, &ik, &alpha, bj, &ib, ai, &ia, &beta, c + i * ldc + j, &ic);
    }
  }
#else
  RowGemmWithTorch(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

void Transpose(const float* src, int64_t rows, int64_t cols, float* dst, int64_t ld) {
  if (ld < 0) ld = rows;
  int64_t c0 = 0;
#ifdef __SSE__
  // In 4 x 4 tiles through SSE registers (every x86-64 has SSE), 8 of dst's rows at a time from
  // top to bottom: those 8 rows' cache lines fill in order, where a band of source rows across
  // every column would touch all of dst's rows at once, whose 2 KB stride maps them onto a few
  // sets of L1 (512 x 128: 10 us against 28 in 8 x 8 tiles element by element).
  for (; c0 + 8 <= cols; c0 += 8) {
    int64_t r0 = 0;
    for (; r0 + 4 <= rows; r0 += 4) {
      const float* s = src + r0 * cols + c0;
      for (int64_t half = 0; half < 8; half += 4) {
        __m128 a = _mm_loadu_ps(s + half), b = _mm_loadu_ps(s + cols + half);
        __m128 c = _mm_loadu_ps(s + 2 * cols + half), d = _mm_loadu_ps(s + 3 * cols + half);
        _MM_TRANSPOSE4_PS(a, b, c, d);
        float* o = dst + (c0 + half) * ld + r0;
        _mm_storeu_ps(o, a);
        _mm_storeu_ps(o + ld, b);
        _mm_storeu_ps(o + 2 * ld, c);
        _mm_storeu_ps(o + 3 * ld, d);
      }
    }
    for (; r0 < rows; ++r0) {
      for (int64_t j = c0; j < c0 + 8; ++j) dst[j * ld + r0] = src[r0 * cols + j];
    }
  }
#endif
  for (; c0 < cols; ++c0) {
    for (int64_t r0 = 0; r0 < rows; ++r0) dst[c0 * ld + r0] = src[r0 * cols + c0];
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
