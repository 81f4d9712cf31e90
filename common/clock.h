// The one clock every timing in tteps uses, and seconds since a point on it.
#pragma once

#include <chrono>

namespace tteps {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace tteps

namespace tteps {

// Seconds since this process started (the kernel's start time, so the program's loading counts
// too); 0 where /proc is missing.
double ProcessAgeSeconds();

}  // namespace tteps
