// The one clock every timing in tteps uses, and seconds since a point on it.
#pragma once

#include <chrono>

namespace tteps {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace tteps
