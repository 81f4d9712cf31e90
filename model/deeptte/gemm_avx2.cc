// gemm.h's tiles with AVX2 and FMA: 6 rows by 16 columns (12 accumulators, two loads of the
// panel and a broadcast: 15 of the 16 registers). Built with -mavx2 -mfma
// (worker/CMakeLists.txt) and run only where the CPU has both (cpu_isa.h).
#include <immintrin.h>

#include "model/deeptte/gemm_tiles.h"

namespace tteps::deeptte::gemm {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr bool kFused = true;
  static constexpr int64_t kLanes = 8;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static V Broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  // The first n lanes (0 < n < 8).
  static __m256i Mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V LoadFirst(const float* p, int64_t n) { return _mm256_maskload_ps(p, Mask(n)); }
  static void StoreFirst(float* p, V v, int64_t n) { _mm256_maskstore_ps(p, Mask(n), v); }
};

}  // namespace

extern const Kernels kAvx2Kernels;
const Kernels kAvx2Kernels = MakeKernels<Avx2, 6, 2>(CpuIsa::kAvx2);

}  // namespace tteps::deeptte::gemm
