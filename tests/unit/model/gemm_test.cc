// Our matrix products (gemm.h) for every instruction set this CPU runs: against sums in double,
// every transposition, accumulation and packing offset, sizes around the tiles' edges; and the
// rounding the header promises: the same bits on every instruction set and for any split of the
// rows or columns.
#include "model/deeptte/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/deeptte/cpu_isa.h"

namespace tteps::deeptte::gemm {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

// C = op(A) op(B) (+ C) in double, as gemm.h's arguments describe them.
std::vector<double> Reference(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                              const std::vector<float>& a, int64_t lda, const std::vector<float>& b,
                              int64_t ldb, const std::vector<float>& c, int64_t ldc,
                              bool accumulate) {
  std::vector<double> out(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = accumulate ? c[i * ldc + j] : 0.0;
      for (int64_t p = 0; p < k; ++p) {
        s += double(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      }
      out[i * n + j] = s;
    }
  }
  return out;
}

TEST(Gemm, TheActiveKernelsAreOnesThisCpuRuns) {
  const auto here = KernelsHere();
  ASSERT_FALSE(here.empty());
  EXPECT_EQ(here.front()->isa, CpuIsa::kGeneric);
  EXPECT_EQ(ActiveKernels().isa, ActiveCpuIsa());
  EXPECT_LE(ActiveCpuIsa(), CpuIsaOfThisCpu());
  std::printf("this CPU: %s; active: %s; kernels here:", CpuIsaName(CpuIsaOfThisCpu()),
              CpuIsaName(ActiveCpuIsa()));
  for (const auto* k : here) std::printf(" %s (panel %ld)", CpuIsaName(k->isa), long(k->panel));
  std::printf("\n");
}

TEST(Gemm, TheCapIsParsedOrRefusedByName) {
  EXPECT_EQ(ParseCpuIsa("avx2"), CpuIsa::kAvx2);
  EXPECT_EQ(ParseCpuIsa("avx512"), CpuIsa::kAvx512);
  EXPECT_EQ(ParseCpuIsa("generic"), CpuIsa::kGeneric);
  try {
    ParseCpuIsa("sse9");
    FAIL() << "sse9 was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("TTEPS_MAX_CPU_ISA=sse9"), std::string::npos);
  }
}

TEST(Gemm, EqualsSumsInDoubleForEveryShapeAndTransposition) {
  for (const auto* kernels : KernelsHere()) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = trans & 1, tb = trans & 2;
      // Rows around the tiles' heights (6, 12), columns around the panels' widths (8 to 32).
      for (int64_t m : {1, 5, 6, 7, 13, 25}) {
        for (int64_t n : {1, 15, 16, 17, 33, 70}) {
          for (int64_t k : {0, 1, 9, 64}) {
            for (bool accumulate : {false, true}) {
              SCOPED_TRACE(std::string(CpuIsaName(kernels->isa)) + " ta " + std::to_string(ta) +
                           " tb " + std::to_string(tb) + " m " + std::to_string(m) + " n " +
                           std::to_string(n) + " k " + std::to_string(k) +
                           (accumulate ? " accumulate" : ""));
              const int64_t pad = 3;  // every matrix inside wider rows
              const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
              const auto a = Random((ta ? k : m) * lda, 1), b = Random((tb ? n : k) * ldb, 2);
              auto c = Random(m * ldc, 3);
              const auto want = Reference(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
              const auto before = c;
              Multiply(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc, accumulate,
                       *kernels);
              for (int64_t i = 0; i < m; ++i) {
                for (int64_t j = 0; j < ldc; ++j) {
                  if (j >= n) {  // past the product's columns: untouched
                    ASSERT_EQ(c[i * ldc + j], before[i * ldc + j]) << i << "," << j;
                  } else {
                    ASSERT_NEAR(c[i * ldc + j], want[i * n + j], 1e-5 * (k + 2)) << i << "," << j;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// A packed matrix filled in two parts and read from a later row (as the LSTM's [W_hh, W_ih]^T
// at its first step) equals the whole matrix packed at once.
TEST(Gemm, PackedPartsAndRowOffsetsEqualOneProduct) {
  const int64_t m = 10, n = 40, k1 = 7, k2 = 11, k = k1 + k2;
  const auto a = Random(m * k, 4), b = Random(k * n, 5);
  for (const auto* kernels : KernelsHere()) {
    SCOPED_TRACE(CpuIsaName(kernels->isa));
    // b's rows as two transposed parts: part^T is n x rows.
    std::vector<float> top_t(n * k1), bottom_t(n * k2);
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) {
        (p < k1 ? top_t[j * k1 + p] : bottom_t[j * k2 + p - k1]) = b[p * n + j];
      }
    }
    PackedMatrix parts(*kernels);
    parts.Resize(k, n);
    parts.Fill(true, 0, k1, top_t.data(), k1);
    parts.Fill(true, k1, k2, bottom_t.data(), k2);
    std::vector<float> got(m * n), want(m * n);
    parts.LeftMultiply(false, m, a.data(), k, got.data(), n, false);
    Multiply(false, false, m, n, k, a.data(), k, b.data(), n, want.data(), n, false, *kernels);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
    // From row k1 on: A's last k2 columns against B's last k2 rows.
    parts.LeftMultiply(false, m, a.data() + k1, k, got.data(), n, false, k1);
    Multiply(false, false, m, n, k2, a.data() + k1, k, b.data() + k1 * n, n, want.data(), n, false,
             *kernels);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
  }
}

// The same bits on every instruction set with fused multiply-adds, and row by row as all at once.
TEST(Gemm, TheSameBitsOnEveryInstructionSetAndForAnySplitOfTheRows) {
  const int64_t m = 37, n = 515, k = 161;
  const auto a = Random(m * k, 6), b = Random(k * n, 7);
  std::vector<float> first;
  for (const auto* kernels : KernelsHere()) {
    if (!kernels->fused) continue;
    SCOPED_TRACE(CpuIsaName(kernels->isa));
    std::vector<float> all(m * n), by_row(m * n);
    const PackedMatrix packed(false, k, n, b.data(), n, *kernels);
    packed.LeftMultiply(false, m, a.data(), k, all.data(), n, false);
    for (int64_t i = 0; i < m; ++i) {
      packed.LeftMultiply(false, 1, a.data() + i * k, k, by_row.data() + i * n, n, false);
    }
    EXPECT_EQ(0, std::memcmp(all.data(), by_row.data(), all.size() * sizeof(float)));
    if (first.empty()) {
      first = all;
    } else {
      EXPECT_EQ(0, std::memcmp(all.data(), first.data(), all.size() * sizeof(float)));
    }
  }
  if (first.empty()) GTEST_SKIP() << "no kernels with fused multiply-adds on this CPU";
}

TEST(Gemm, TransposeIsExact) {
  for (const auto& [rows, cols] :
       {std::pair<int64_t, int64_t>{512, 128}, {512, 61}, {37, 5}, {1, 19}}) {
    const auto src = Random(rows * cols, 8);
    std::vector<float> dst(rows * cols);
    Transpose(src.data(), rows, cols, dst.data());
    // Into the first columns of a wider matrix (rows + 3 floats a row), the rest untouched.
    std::vector<float> wide(cols * (rows + 3), 7.0f);
    Transpose(src.data(), rows, cols, wide.data(), rows + 3);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(dst[c * rows + r], src[r * cols + c]) << rows << " x " << cols;
        ASSERT_EQ(wide[c * (rows + 3) + r], src[r * cols + c]) << rows << " x " << cols;
      }
    }
    for (int64_t c = 0; c < cols; ++c) {
      for (int64_t r = rows; r < rows + 3; ++r) ASSERT_EQ(wide[c * (rows + 3) + r], 7.0f);
    }
  }
}

}  // namespace
}  // namespace tteps::deeptte::gemm
