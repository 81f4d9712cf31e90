// What computes the model's products on the CPU, named for reports (summary.json, the
// benchmarks): tteps' own kernels and their instruction set, and the BLAS that LibTorch's own
// operators call (those outside the fused CPU nodes, and the PyTorch baseline's), with the kernel
// type it picked. Torch-free.
#pragma once

#include <string>

namespace tteps::deeptte {

// "tteps avx2": the kernels of gemm.h this process runs.
std::string GemmName();

// "OpenBLAS 0.3.21 Haswell" where the process runs OpenBLAS (from its own report of its version
// and kernel type), else "unknown".
std::string BlasName();

}  // namespace tteps::deeptte
