#include "common/numerics.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tteps {

double SquaredNorm(const float* v, size_t n) {
  // Eight independent partial sums, so the loop vectorises without reassociating anything: the
  // result depends only on the data, not on the compiler or the CPU.
  constexpr size_t kLanes = 8;
  double partial[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      const double x = v[i + k];
      partial[k] += x * x;
    }
  }
  for (size_t k = 0; i < n; ++i, ++k) {
    const double x = v[i];
    partial[k] += x * x;
  }
  double sum = 0;
  for (double p : partial) sum += p;
  return sum;
}

size_t FirstNonFinite(const float* v, size_t n) {
  // A branch-free scan of the exponent bits (all ones: NaN or infinity) that vectorises; the
  // index is searched for only when something was found.
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, v + i, sizeof bits);
    bad |= (bits & 0x7f800000u) == 0x7f800000u;
  }
  if (!bad) return n;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) return i;
  }
  return n;
}

}  // namespace tteps
