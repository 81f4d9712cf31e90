// gemm.h's tiles with AVX-512: 12 rows by 32 columns (24 accumulators, two loads of the panel and
// a broadcast, of the 32 registers). Built with -mavx512f -mfma (worker/CMakeLists.txt) and run
// only where the CPU has both (cpu_isa.h).
#include <immintrin.h>

#include "model/deeptte/gemm_tiles.h"

namespace tteps::deeptte::gemm {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr bool kFused = true;
  static constexpr int64_t kLanes = 16;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static V Broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // The first n lanes (0 < n < 16).
  static __mmask16 Mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }
  static V LoadFirst(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(Mask(n), p); }
  static void StoreFirst(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, Mask(n), v); }
};

}  // namespace

extern const Kernels kAvx512Kernels;
const Kernels kAvx512Kernels = MakeKernels<Avx512, 12, 2>(CpuIsa::kAvx512);

}  // namespace tteps::deeptte::gemm
