// --device: a CPU always resolves; a GPU that is not there fails at once with the reason.
#include "model/device.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <stdexcept>

namespace tteps {
namespace {

std::string ErrorOf(const std::string& spec) {
  try {
    ResolveDevice(spec, 0);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Device, CpuAlwaysResolves) { EXPECT_TRUE(ResolveDevice("cpu", 3).is_cpu()); }

TEST(Device, AnUnknownDeviceIsRefusedByName) {
  EXPECT_NE(ErrorOf("gpu").find("must be cpu, cuda or cuda:N, not 'gpu'"), std::string::npos);
}

TEST(Device, CudaFailsWithTheReasonWhereItIsNotAvailable) {
  const std::string why = CudaUnavailableReason();
  EXPECT_EQ(why.empty(), torch::cuda::is_available());
  if (why.empty()) {
    // A GPU machine: a GPU it lacks is named with the count it has; local ranks wrap around.
    EXPECT_NE(ErrorOf("cuda:4096").find("GPU(s)"), std::string::npos);
    const int n = static_cast<int>(torch::cuda::device_count());
    EXPECT_EQ(ResolveDevice("cuda", n + 1).index(), 1 % n);
    return;
  }
  for (const std::string spec : {"cuda", "cuda:0", "cuda:1"}) {
    const std::string error = ErrorOf(spec);
    EXPECT_NE(error.find("--device " + spec + ": CUDA is not available: "), std::string::npos)
        << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace tteps
