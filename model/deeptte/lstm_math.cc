#include "model/deeptte/lstm_math.h"

#include "model/deeptte/cpu_isa.h"
#include "model/deeptte/lstm_math_lanes.h"

namespace tteps::deeptte::lstm_math {

#ifdef TTEPS_X86_KERNELS
// lstm_math_avx2.cc, built with -mavx2 -mfma; lstm_math_avx512.cc, with -mavx512f -mfma.
extern const CellKernels kAvx2CellKernels;
extern const CellKernels kAvx512CellKernels;
#endif

namespace {

typedef float F4 __attribute__((vector_size(16)));
const CellKernels kSse2CellKernels = MakeCellKernels<F4>("sse2");

const CellKernels& CellKernelsFor(CpuIsa isa) {
#ifdef TTEPS_X86_KERNELS
  if (isa == CpuIsa::kAvx512) return kAvx512CellKernels;
  if (isa == CpuIsa::kAvx2) return kAvx2CellKernels;
#endif
  (void)isa;
  return kSse2CellKernels;
}

}  // namespace

const CellKernels& ActiveCellKernels() {
  static const CellKernels& active = CellKernelsFor(ActiveCpuIsa());
  return active;
}

std::vector<const CellKernels*> CellKernelsHere() {
  std::vector<const CellKernels*> here = {&kSse2CellKernels};
#ifdef TTEPS_X86_KERNELS
  if (CpuIsaOfThisCpu() >= CpuIsa::kAvx2) here.push_back(&kAvx2CellKernels);
  if (CpuIsaOfThisCpu() >= CpuIsa::kAvx512) here.push_back(&kAvx512CellKernels);
#endif
  return here;
}

}  // namespace tteps::deeptte::lstm_math
