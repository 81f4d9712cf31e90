#include "worker/deeptte/lstm_math.h"

#include "worker/deeptte/lstm_math_lanes.h"

namespace tteps::deeptte::lstm_math {

#ifdef TTEPS_AVX2_KERNELS
// lstm_math_avx2.cc, built with -mavx2 -mfma; lstm_math_avx512.cc, with -mavx512f -mfma.
extern const CellKernels kAvx2CellKernels;
extern const CellKernels kAvx512CellKernels;
#endif

namespace {

typedef float F4 __attribute__((vector_size(16)));
const CellKernels kSse2CellKernels = MakeCellKernels<F4>("sse2");

#ifdef TTEPS_AVX2_KERNELS
bool HasAvx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool HasAvx512() { return HasAvx2() && __builtin_cpu_supports("avx512f"); }
#endif

}  // namespace

const CellKernels& BestCellKernels() {
#ifdef TTEPS_AVX2_KERNELS
  static const CellKernels& best = HasAvx512() ? kAvx512CellKernels
                                   : HasAvx2() ? kAvx2CellKernels
                                               : kSse2CellKernels;
  return best;
#else
  return kSse2CellKernels;
#endif
}

std::vector<const CellKernels*> CellKernelsHere() {
  std::vector<const CellKernels*> here = {&kSse2CellKernels};
#ifdef TTEPS_AVX2_KERNELS
  if (HasAvx2()) here.push_back(&kAvx2CellKernels);
  if (HasAvx512()) here.push_back(&kAvx512CellKernels);
#endif
  return here;
}

}  // namespace tteps::deeptte::lstm_math
