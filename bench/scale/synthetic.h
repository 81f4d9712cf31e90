// The simulated workers' arithmetic: initial values and gradients that are a known function of
// the key, the step and the slice, small integers times powers of two, so that every sum the
// servers form and every SGD step they apply is exact in float, whatever the order. The
// weights any version must hold then follow from the steps alone (Expected), and a simulated
// job is checked to the bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tteps::sim {

// Key `k`'s initial value (worker 0 gives the servers these): an integer in [-2, 2].
float Initial(int64_t k);
// The gradient's shape over the keys: an integer in [-4, 3].
float Shape(int64_t k);
// What slice `slice` contributes at step `step`: an integer in [-3, 3]; its gradient sum is
// Coefficient * Shape (one trip behind it).
int Coefficient(int64_t step, int slice);

// Fills `grad` with slice `slice`'s gradient sum at step `step`, from `shape` (Shape of every key).
void FillGradient(const std::vector<float>& shape, int64_t step, int slice,
                  std::vector<float>* grad);

// Sync with SGD at rate `lr` (a power of two): the weights of version `version` when each of
// `slices` slices pushed one trip at every step before it.
std::vector<float> Expected(int64_t count, int64_t version, int slices, double lr);

// The keys where `got` differs from `want` (at most `limit` listed), and their count.
struct Mismatch {
  int64_t count = 0;
  std::vector<int64_t> keys;
  double max_abs = 0;
};
Mismatch Compare(const std::vector<float>& got, const std::vector<float>& want, size_t limit = 5);

}  // namespace tteps::sim
