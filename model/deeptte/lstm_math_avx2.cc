// The cell kernels with eight lanes; built with -mavx2 -mfma (worker/CMakeLists.txt) and run
// only where the CPU has both (lstm_math.cc checks).
#include "model/deeptte/lstm_math_lanes.h"

namespace tteps::deeptte::lstm_math {
namespace {
typedef float F8 __attribute__((vector_size(32)));
}  // namespace

extern const CellKernels kAvx2CellKernels;
const CellKernels kAvx2CellKernels = MakeCellKernels<F8>("avx2");

}  // namespace tteps::deeptte::lstm_math
