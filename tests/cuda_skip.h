// GPU tests (CTest label "gpu") skip, saying why, where this process cannot use CUDA.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "model/device.h"

#define TTEPS_SKIP_WITHOUT_CUDA()                                  \
  do {                                                             \
    const std::string why = ::tteps::CudaUnavailableReason();      \
    if (!why.empty()) GTEST_SKIP() << "needs a CUDA GPU: " << why; \
  } while (0)
