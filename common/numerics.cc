#include "common/numerics.h"

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

}  // namespace tteps
