// The cell kernels with sixteen lanes; built with -mavx512f -mfma (worker/CMakeLists.txt) and
// run only where the CPU has both (lstm_math.cc checks).
#include "model/deeptte/lstm_math_lanes.h"

namespace tteps::deeptte::lstm_math {
namespace {
typedef float F16 __attribute__((vector_size(64)));
}  // namespace

extern const CellKernels kAvx512CellKernels;
const CellKernels kAvx512CellKernels = MakeCellKernels<F16>("avx512");

}  // namespace tteps::deeptte::lstm_math
