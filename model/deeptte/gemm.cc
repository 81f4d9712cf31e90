#include "model/deeptte/gemm.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "model/deeptte/gemm_tiles.h"

#ifdef __SSE__
#include <xmmintrin.h>
#endif

namespace tteps::deeptte::gemm {

#ifdef TTEPS_X86_KERNELS
// gemm_avx2.cc, built with -mavx2 -mfma; gemm_avx512.cc, with -mavx512f -mfma.
extern const Kernels kAvx2Kernels;
extern const Kernels kAvx512Kernels;
#endif

namespace {

// For CPUs without the wide kernels. Where the compiler's target has a fused multiply-add
// instruction (FP_FAST_FMAF: aarch64, or x86 built with -mfma), one float per "vector" and one
// fused multiply-add per term: the sums of the wide kernels bit for bit. Elsewhere (an x86-64
// without AVX2) four lanes of SSE and a multiply and an add per term, since the C library's
// exact fma in software ran at a hundredth of the speed.
#ifdef FP_FAST_FMAF
struct Plain {
  using V = float;
  static constexpr bool kFused = true;
  static constexpr int64_t kLanes = 1;
  static V Zero() { return 0.0f; }
  static V Load(const float* p) { return *p; }
  static V Broadcast(const float* p) { return *p; }
  static V Fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V Add(V a, V b) { return a + b; }
  static void Store(float* p, V v) { *p = v; }
  static V LoadFirst(const float* p, int64_t) { return *p; }
  static void StoreFirst(float* p, V v, int64_t) { *p = v; }
};
constexpr int kPlainRows = 4, kPlainVectors = 4;
#else
struct Plain {
  typedef float V __attribute__((vector_size(16)));
  static constexpr bool kFused = false;
  static constexpr int64_t kLanes = 4;
  static V Zero() { return V{}; }
  static V Load(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static V Broadcast(const float* p) { return V{} + *p; }
  static V Fma(V a, V b, V c) { return a * b + c; }
  static V Add(V a, V b) { return a + b; }
  static void Store(float* p, V v) { std::memcpy(p, &v, sizeof v); }
  static V LoadFirst(const float* p, int64_t n) {
    V v{};
    std::memcpy(&v, p, n * sizeof(float));
    return v;
  }
  static void StoreFirst(float* p, V v, int64_t n) { std::memcpy(p, &v, n * sizeof(float)); }
};
constexpr int kPlainRows = 4, kPlainVectors = 2;
#endif

const Kernels kPlainKernels = MakeKernels<Plain, kPlainRows, kPlainVectors>(CpuIsa::kGeneric);

const Kernels& KernelsFor(CpuIsa isa) {
#ifdef TTEPS_X86_KERNELS
  if (isa == CpuIsa::kAvx512) return kAvx512Kernels;
  if (isa == CpuIsa::kAvx2) return kAvx2Kernels;
#endif
  (void)isa;
  return kPlainKernels;
}

}  // namespace

const Kernels& ActiveKernels() {
  static const Kernels& active = KernelsFor(ActiveCpuIsa());
  return active;
}

std::vector<const Kernels*> KernelsHere() {
  std::vector<const Kernels*> here;
  for (CpuIsa isa : {CpuIsa::kGeneric, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    const Kernels& k = KernelsFor(isa);
    if (isa <= CpuIsaOfThisCpu() && k.isa == isa) here.push_back(&k);
  }
  return here;
}

int64_t PackedSize(const Kernels& kernels, int64_t k, int64_t n) {
  const int64_t panels = (n + kernels.panel - 1) / kernels.panel;
  return panels * kernels.panel * k;
}

void PackB(const Kernels& kernels, bool trans_b, int64_t rows, int64_t n, const float* b,
           int64_t ldb, float* packed, int64_t k, int64_t first_row) {
  const int64_t panel = kernels.panel;
  for (int64_t j = 0; j < n; j += panel) {
    float* out = packed + j * k + first_row * panel;
    const int64_t cols = std::min(panel, n - j);
    if (cols < panel) std::memset(out, 0, rows * panel * sizeof(float));
    if (!trans_b) {
      for (int64_t p = 0; p < rows; ++p) {
        std::memcpy(out + p * panel, b + p * ldb + j, cols * sizeof(float));
      }
    } else {  // B^T given: column j of B is row j of b, read in order
      for (int64_t jj = 0; jj < cols; ++jj) {
        const float* row = b + (j + jj) * ldb;
        for (int64_t p = 0; p < rows; ++p) out[p * panel + jj] = row[p];
      }
    }
  }
}

PackedMatrix::PackedMatrix(bool trans_b, int64_t k, int64_t n, const float* b, int64_t ldb,
                           const Kernels& kernels)
    : kernels_(&kernels) {
  Resize(k, n);
  Fill(trans_b, 0, k, b, ldb);
}

void PackedMatrix::Resize(int64_t k, int64_t n) {
  k_ = k;
  n_ = n;
  data_.resize(PackedSize(*kernels_, k, n));
}

void PackedMatrix::Fill(bool trans_b, int64_t first_row, int64_t rows, const float* b,
                        int64_t ldb) {
  PackB(*kernels_, trans_b, rows, n_, b, ldb, data_.data(), k_, first_row);
}

namespace {

// Terms per part of a long product: a part of a panel (256 rows of 16 or 32 floats: 16 or 32 KB)
// stays in L1 while the row tiles run over it. (A weight's gradient sums over thousands of rows;
// in one pass, each tile read its panel from memory: 20 to 60 GFLOP/s.)
constexpr int64_t kTermsPerPart = 256;

// op(A) B in parts of at most kTermsPerPart terms, their sums carried from part to part (as one
// pass would). part(k0, terms) returns B's packed rows k0 .. k0 + terms - 1 and the length of
// the panels they are in.
template <typename Part>
void InParts(const Kernels& kernels, bool trans_a, int64_t m, int64_t n, int64_t k, const float* a,
             int64_t lda, float* c, int64_t ldc, bool accumulate, Part part) {
  if (k <= kTermsPerPart) {
    const auto [b, panel_rows] = part(0, k);
    kernels.multiply(trans_a, m, n, k, a, lda, b, panel_rows, nullptr, nullptr, c, ldc, accumulate);
    return;
  }
  thread_local std::vector<float> partial;
  partial.resize(m * ((n + kernels.panel - 1) / kernels.panel * kernels.panel));
  for (int64_t k0 = 0; k0 < k; k0 += kTermsPerPart) {
    const int64_t terms = std::min(kTermsPerPart, k - k0);
    const auto [b, panel_rows] = part(k0, terms);
    kernels.multiply(trans_a, m, n, terms, trans_a ? a + k0 * lda : a + k0, lda, b, panel_rows,
                     k0 == 0 ? nullptr : partial.data(), k0 + terms == k ? nullptr : partial.data(),
                     c, ldc, accumulate);
  }
}

}  // namespace

void PackedMatrix::LeftMultiply(bool trans_a, int64_t m, const float* a, int64_t lda, float* c,
                                int64_t ldc, bool accumulate, int64_t first_row) const {
  InParts(*kernels_, trans_a, m, n_, k_ - first_row, a, lda, c, ldc, accumulate,
          [&](int64_t k0, int64_t) {
            return std::pair{data_.data() + (first_row + k0) * kernels_->panel, k_};
          });
}

void Multiply(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
              const Kernels& kernels) {
  if (m <= 0 || n <= 0) return;
  // Each part of B packed as it is needed, into a buffer that stays in cache.
  thread_local std::vector<float> packed;
  packed.resize(PackedSize(kernels, std::min(k, kTermsPerPart), n));
  InParts(kernels, trans_a, m, n, k, a, lda, c, ldc, accumulate, [&](int64_t k0, int64_t terms) {
    PackB(kernels, trans_b, terms, n, trans_b ? b + k0 : b + k0 * ldb, ldb, packed.data(), terms);
    return std::pair{static_cast<const float*>(packed.data()), terms};
  });
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

}  // namespace tteps::deeptte::gemm
