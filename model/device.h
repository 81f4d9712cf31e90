// Where a process runs its model (--device), checked before any work starts: a GPU that is not
// there fails in a second with the reason, not after the data has loaded or with a stack trace.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace tteps {

// "cpu", "cuda" (GPU local_rank % the host's GPUs) or "cuda:N". Throws std::runtime_error
// saying why CUDA is not available (a CPU-only LibTorch, or no GPU or driver visible) or that
// GPU N does not exist.
c10::Device ResolveDevice(const std::string& spec, int local_rank);

// Empty if this process can use CUDA; else why not (for the errors and the GPU tests' skips).
std::string CudaUnavailableReason();

// This process's rank among those on its host (OpenMPI's or Slurm's variable; 0 without).
int LocalRank();

// --deterministic: LibTorch's deterministic algorithms, cuDNN deterministic and not
// benchmarking, no TF32 (cuDNN's default), and cuBLAS's fixed workspace (set before CUDA starts).
void MakeDeterministic();

}  // namespace tteps
