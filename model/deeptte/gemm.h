// Matrix products on row-major float matrices for the model's CPU kernels (cpu_lstm.cc,
// fused_mlp.cc, packed_geo_conv.cc): our own register-tiled kernels for AVX-512 and for AVX2 with
// FMA, chosen at run time (cpu_isa.h), and a plain one elsewhere. Torch-free.
//
// Why our own: the products are a few rows by a few hundred columns, hundreds per step. OpenBLAS
// multiplies those fast only where it picks its AVX-512 small-matrix kernel; on its AVX2 path
// (Haswell: CPUs without AVX-512, and newer ones an older OpenBLAS must be pinned to) it packs
// both operands on every call, and a step ran at half the speed the arithmetic allows.
//
// B is packed once into panels of `panel` columns (k rows each, zero-padded), which a product
// then reads in order; a weight matrix used at every time step is packed once per pass.
//
// Rounding: every element of C is the sum over p = 0 .. k-1 of A[i][p] B[p][j] in that order,
// each term added by one fused multiply-add into a float that starts at zero (then added to C
// when accumulating). So the result is the same bit for bit on every instruction set, for any
// number of rows per call and any split of the rows or columns between calls or threads. (Only
// the plain kernels of a CPU without fused multiply-adds round each product first: `fused`.)
#pragma once

#include <cstdint>
#include <vector>

#include "model/deeptte/cpu_isa.h"

namespace tteps::deeptte::gemm {

struct Kernels {
  CpuIsa isa;
  int64_t panel;  // columns per packed panel of B
  // Whether each term is added by a fused multiply-add (the sums of gemm.h's rounding note);
  // false only for the plain kernels of a CPU without one.
  bool fused;
  // C (m x n, row stride ldc) = op(A) B, or C += op(A) B when accumulate. op(A) is m x k: A
  // itself (row stride lda) or, when trans_a, A^T of a k x m matrix (row stride lda). B (k x n)
  // is read from panels packed for these kernels (PackB) whose panels are panel_rows >= k rows
  // long: rows r .. r + k - 1 of a packed matrix are packed_b = its start + r * panel.
  // A product over more terms than fit in cache runs in parts of k: each part's sums start from
  // partial_in (m x n rounded up to whole panels; null: from zero) and end in partial_out
  // (null: in C), so that the sums are those of one pass.
  void (*multiply)(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* packed_b, int64_t panel_rows, const float* partial_in,
                   float* partial_out, float* c, int64_t ldc, bool accumulate);
};

// The kernels of ActiveCpuIsa().
const Kernels& ActiveKernels();
// Every kernel set this CPU runs, narrowest first: for the tests.
std::vector<const Kernels*> KernelsHere();

// Floats PackB writes for a k x n B with these kernels.
int64_t PackedSize(const Kernels& kernels, int64_t k, int64_t n);
// Packs op(B), rows x n, as rows first_row .. first_row + rows - 1 of a packed k x n matrix:
// op(B) is B itself (row stride ldb) or, when trans_b, B^T of an n x rows matrix.
void PackB(const Kernels& kernels, bool trans_b, int64_t rows, int64_t n, const float* b,
           int64_t ldb, float* packed, int64_t k, int64_t first_row = 0);

// A packed B, for products that reuse it (a weight matrix at every time step).
class PackedMatrix {
 public:
  explicit PackedMatrix(const Kernels& kernels = ActiveKernels()) : kernels_(&kernels) {}
  // op(B) (k x n), as PackB takes it.
  PackedMatrix(bool trans_b, int64_t k, int64_t n, const float* b, int64_t ldb,
               const Kernels& kernels = ActiveKernels());
  // Makes room for a k x n matrix (its contents undefined until filled), reusing the memory.
  void Resize(int64_t k, int64_t n);
  // Fills rows first_row .. first_row + rows - 1 from op(B) (rows x n), as PackB.
  void Fill(bool trans_b, int64_t first_row, int64_t rows, const float* b, int64_t ldb);
  // C (m x n) = op(A) B[first_row:], or += when accumulate; op(A) is m x (k - first_row).
  void LeftMultiply(bool trans_a, int64_t m, const float* a, int64_t lda, float* c, int64_t ldc,
                    bool accumulate, int64_t first_row = 0) const;
  int64_t rows() const { return k_; }
  int64_t cols() const { return n_; }

 private:
  const Kernels* kernels_;
  int64_t k_ = 0, n_ = 0;
  std::vector<float> data_;
};

// C (m x n) = op(A) op(B), or += when accumulate, B packed on the way (into a buffer the
// calling thread keeps).
void Multiply(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
              const Kernels& kernels = ActiveKernels());

// dst (cols x rows) = src (rows x cols)^T, src contiguous, dst's rows `ld` floats apart (rows
// when omitted), in SSE tiles where the CPU has them.
void Transpose(const float* src, int64_t rows, int64_t cols, float* dst, int64_t ld = -1);

}  // namespace tteps::deeptte::gemm
