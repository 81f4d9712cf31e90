// C = alpha * op(A) op(B) + beta * C on row-major float matrices in CPU memory, without tensors:
// for the CPU LSTM's per-step products (cpu_lstm.cc), hundreds per step of a few rows each,
// where creating views and dispatching LibTorch operators cost as much as the arithmetic at
// small batches. With the BLAS LibTorch calls (Debian's: found by CMake) it calls sgemm_ as
// LibTorch's mm would, in blocks of 8 rows (OpenBLAS's small-matrix kernel, row_gemm.cc): equal
// to LibTorch's product to float rounding. Without one (a PyTorch wheel bundles its own BLAS),
// it runs LibTorch's operator on the same memory.
#pragma once

#include <cstdint>

namespace tteps::deeptte {

// op(A) is m x k (A itself k x m when trans_a), op(B) k x n, C m x n; ld*: each matrix's row
// stride in floats.
void RowGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc);

// The same in one call: for products over many rows whose right-hand matrix is small (packing
// it once beats the small-matrix kernel's re-reading per block).
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The same with LibTorch's operators on the same memory: RowGemm's path without a BLAS.
void RowGemmWithTorch(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc);

// dst (cols x rows) = src (rows x cols)^T, src contiguous, dst's rows `ld` floats apart (rows
// when omitted), in SSE tiles (LibTorch's copy of a transposed view walks one of them with a
// stride: 4x slower at 512 x 128).
void Transpose(const float* src, int64_t rows, int64_t cols, float* dst, int64_t ld = -1);

// Whether RowGemm calls the BLAS directly (else RowGemmWithTorch).
bool RowGemmCallsBlas();

}  // namespace tteps::deeptte
