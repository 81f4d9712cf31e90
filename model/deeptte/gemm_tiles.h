// The register-tiled product of gemm.h, written once over an instruction set's traits T (V: the
// vector type; kLanes; kFused: whether Fma is one rounding; Zero, Load, Broadcast, Fma, Add;
// LoadFirst/StoreFirst for the first n lanes). Each instruction set's file includes this and
// instantiates it (gemm.cc: the plain one; gemm_avx2.cc; gemm_avx512.cc). Everything here has
// internal linkage: code built with -mavx2 must never be merged by the linker into code that runs
// on CPUs without it.
//
// A tile is MR rows by NV vectors of C, held in registers while p runs over k: per p, NV loads
// of the packed panel, MR broadcasts of A and MR * NV fused multiply-adds. Each element's sum
// runs over p in order from zero, whatever the tile's shape (gemm.h: the same bits everywhere).
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/deeptte/gemm.h"

namespace tteps::deeptte::gemm {
namespace {  // NOLINT(build/namespaces): one copy per instruction set, by design

// One tile over k terms. The sums start from zero, or from partial_in (the tile's unfinished
// sums, row stride ld_partial) and go on in order; they end in partial_out when it is given
// (whole panels), else in C: stored, or added to C when accumulate (the first `cols` columns).
template <class T, int MR, int NV, bool kTransA>
inline void Tile(int64_t k, const float* a, int64_t lda, const float* b, const float* partial_in,
                 float* partial_out, int64_t ld_partial, float* c, int64_t ldc, int64_t cols,
                 bool accumulate) {
  using V = typename T::V;
  constexpr int64_t kPanel = NV * T::kLanes;
  // A's element (i, p): rows lda apart and columns adjacent, or the other way when transposed.
  constexpr int64_t kColStep = kTransA ? 0 : 1;
  const int64_t row_step = kTransA ? 1 : lda, col_step = kTransA ? lda : kColStep;
  V acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = partial_in ? T::Load(partial_in + i * ld_partial + v * T::kLanes) : T::Zero();
    }
  }
  for (int64_t p = 0; p < k; ++p) {
    V bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = T::Load(b + p * kPanel + v * T::kLanes);
    const float* ap = a + p * col_step;
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const V ai = T::Broadcast(ap + i * row_step);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = T::Fma(ai, bv[v], acc[i][v]);
    }
  }
  if (partial_out) {
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v)
        T::Store(partial_out + i * ld_partial + v * T::kLanes, acc[i][v]);
    }
    return;
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * ldc;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const int64_t left = cols - v * T::kLanes;
      if (left >= T::kLanes) {
        T::Store(ci + v * T::kLanes,
                 accumulate ? T::Add(acc[i][v], T::Load(ci + v * T::kLanes)) : acc[i][v]);
      } else if (left > 0) {
        T::StoreFirst(
            ci + v * T::kLanes,
            accumulate ? T::Add(acc[i][v], T::LoadFirst(ci + v * T::kLanes, left)) : acc[i][v],
            left);
      }
    }
  }
}

// A tile of `rows` rows (1 .. R) of one panel.
template <class T, int R, int NV, bool kTransA, typename... Args>
inline void TileOfRows(int64_t rows, Args... args) {
  if (rows == R) {
    Tile<T, R, NV, kTransA>(args...);
  } else if constexpr (R > 1) {
    TileOfRows<T, R - 1, NV, kTransA>(rows, args...);
  }
}

// Panel by panel (each panel's k x NV vectors stay in L1 while its row tiles run), the m rows
// in tiles of at most MR rows, as even as they divide: 13 rows as 7 + 6, not 12 + 1.
template <class T, int MR, int NV, bool kTransA>
void MultiplyPanels(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* packed_b, int64_t panel_rows, const float* partial_in,
                    float* partial_out, float* c, int64_t ldc, bool accumulate) {
  constexpr int64_t kPanel = NV * T::kLanes;
  const int64_t tiles = (m + MR - 1) / MR;
  if (tiles == 0) return;
  const int64_t base = m / tiles, longer = m % tiles;  // the first `longer` tiles: base + 1
  const int64_t ld_partial = (n + kPanel - 1) / kPanel * kPanel;
  for (int64_t j = 0; j < n; j += kPanel) {
    const float* b = packed_b + j * panel_rows;
    const int64_t cols = std::min(kPanel, n - j);
    int64_t i = 0;
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t rows = base + (t < longer ? 1 : 0);
      const float* at = kTransA ? a + i : a + i * lda;
      const int64_t at_partial = i * ld_partial + j;
      TileOfRows<T, MR, NV, kTransA>(rows, k, at, lda, b,
                                     partial_in ? partial_in + at_partial : nullptr,
                                     partial_out ? partial_out + at_partial : nullptr, ld_partial,
                                     c + i * ldc + j, ldc, cols, accumulate);
      i += rows;
    }
  }
}

template <class T, int MR, int NV>
void Multiply(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const float* packed_b, int64_t panel_rows, const float* partial_in,
              float* partial_out, float* c, int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (trans_a) {
    MultiplyPanels<T, MR, NV, true>(m, n, k, a, lda, packed_b, panel_rows, partial_in, partial_out,
                                    c, ldc, accumulate);
  } else {
    MultiplyPanels<T, MR, NV, false>(m, n, k, a, lda, packed_b, panel_rows, partial_in, partial_out,
                                     c, ldc, accumulate);
  }
}

template <class T, int MR, int NV>
constexpr Kernels MakeKernels(CpuIsa isa) {
  return {isa, NV * T::kLanes, T::kFused, &Multiply<T, MR, NV>};
}

}  // namespace
}  // namespace tteps::deeptte::gemm
