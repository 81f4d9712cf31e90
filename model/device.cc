#include "model/device.h"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <stdexcept>

namespace tteps {

std::string CudaUnavailableReason() {
  if (torch::cuda::is_available()) return "";
  // A LibTorch built without CUDA says so in its build settings (USE_CUDA=OFF); one with CUDA
  // that sees no GPU has no usable driver or device.
  const std::string settings = at::show_config();
  if (settings.find("USE_CUDA=OFF") != std::string::npos ||
      settings.find("USE_CUDA=0") != std::string::npos) {
    return "this LibTorch is a CPU-only build (build tteps against a CUDA LibTorch: "
           "-DTTEPS_TORCH=python or -DTTEPS_TORCH=/path/to/libtorch, see docs/gpus.md)";
  }
  return "LibTorch has CUDA but sees no GPU (no NVIDIA driver loaded, no device, or "
         "CUDA_VISIBLE_DEVICES hides them)";
}

c10::Device ResolveDevice(const std::string& spec, int local_rank) {
  if (spec == "cpu") return c10::Device(c10::kCPU);
  if (spec != "cuda" && spec.rfind("cuda:", 0) != 0) {
    throw std::runtime_error("--device must be cpu, cuda or cuda:N, not '" + spec + "'");
  }
  const std::string why = CudaUnavailableReason();
  if (!why.empty())
    throw std::runtime_error("--device " + spec + ": CUDA is not available: " + why);
  const int count = static_cast<int>(torch::cuda::device_count());
  int index = local_rank % count;
  if (spec != "cuda") {
    char* end = nullptr;
    const long n = std::strtol(spec.c_str() + 5, &end, 10);
    if (end == spec.c_str() + 5 || *end != '\0' || n < 0 || n >= count) {
      throw std::runtime_error("--device " + spec + ": this host has " + std::to_string(count) +
                               " GPU(s), cuda:0 to cuda:" + std::to_string(count - 1));
    }
    index = static_cast<int>(n);
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

int LocalRank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

void MakeDeterministic() {
  // cuBLAS reads this when CUDA starts; without it deterministic mode refuses its matmuls.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
  // Full float32 in cuDNN's convolutions and RNNs too: PyTorch lets them use TF32 (10-bit
  // mantissas) by default, which put sync on two GPU workers 8e-5 away from local training.
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
}

}  // namespace tteps
