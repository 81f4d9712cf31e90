// The simulated workers' arithmetic: initial values and gradients that are a known function of
// the key, the step and the slice, small integers times powers of two, so that every sum the
// servers form and every SGD step they apply is exact in float, whatever the order. The
// weights any version must hold then follow from the steps alone (Expected), and a simulated
// job is checked to the bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/key_range.h"

namespace tteps::sim {

// Key `k`'s initial value (worker 0 gives the servers these): an integer in [-2, 2].
float Initial(int64_t k);
// The gradient's shape over the keys: an integer in [-4, 3].
float Shape(int64_t k);
// What slice `slice` contributes at step `step`: an integer in [-3, 3]; its gradient sum is
// Coefficient * Shape (one trip behind it).
int Coefficient(int64_t step, int slice);

// Every gradient sum a slice can push, over `count` keys: entry c + 3 is c * Shape. Read-only,
// shared by a process's simulated workers (a push holds one while it is on the wire).
using Gradient = std::shared_ptr<const std::vector<float>>;
std::vector<Gradient> GradientsByCoefficient(int64_t count);

// The keys a simulated push carries: the first `fraction` of each server's range (at least one
// key of each); empty (every key) when `fraction` >= 1.
std::vector<KeyRange> PushedKeys(const std::vector<KeyRange>& ranges, double fraction);

// Sync with SGD at rate `lr` (a power of two): the weights of version `version` when each of
// `slices` slices pushed one trip at every step before it, on the keys of `spans` (empty: every
// key; the others keep their initial values).
std::vector<float> Expected(int64_t count, int64_t version, int slices, double lr,
                            const std::vector<KeyRange>& spans = {});

// Async, where every push is Shape and SGD at `lr` applies it as w + Shape * -lr: key k of `w`
// reads as Initial(k) - lr * n * Shape(k) for n pushes applied to it. The runs of keys with the
// same n, in key order (from the first key to the last that says it: where Shape is 0 a key
// must keep its initial value and says nothing of n), and the keys no whole n >= 0 explains to
// the bit.
struct PushRun {
  int64_t begin = 0, end = 0, n = 0;
};
struct PushRuns {
  std::vector<PushRun> runs;
  int64_t unexplained = 0, first_unexplained = -1;
};
PushRuns ReadPushes(const std::vector<float>& w, double lr);

// The keys of `spans` (empty: every key of `want`) where `got` differs from `want`: their count
// and the first `limit` of them.
struct Mismatch {
  int64_t count = 0;
  std::vector<int64_t> keys;
  double max_abs = 0;
};
Mismatch Compare(const float* got, const std::vector<float>& want,
                 const std::vector<KeyRange>& spans = {}, size_t limit = 5);

}  // namespace tteps::sim
