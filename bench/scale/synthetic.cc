#include "bench/scale/synthetic.h"

#include <algorithm>
#include <cmath>

namespace tteps::sim {

float Initial(int64_t k) { return static_cast<float>(k % 5) - 2.f; }

float Shape(int64_t k) { return static_cast<float>((k * 7) % 8) - 4.f; }

int Coefficient(int64_t step, int slice) {
  return static_cast<int>((step * 5 + static_cast<int64_t>(slice) * 3 + 1) % 7) - 3;
}

void FillGradient(const std::vector<float>& shape, int64_t step, int slice,
                  std::vector<float>* grad) {
  const float c = static_cast<float>(Coefficient(step, slice));
  grad->resize(shape.size());
  float* g = grad->data();
  for (size_t k = 0; k < shape.size(); ++k) g[k] = c * shape[k];
}

std::vector<float> Expected(int64_t count, int64_t version, int slices, double lr) {
  // The servers' arithmetic, step by step: the sum over the slices (integers: exact in any
  // order), scaled by 1 / trips, then p + (g * scale) * -lr, where the product with a power of
  // two is exact, so a fused multiply-add rounds as the two operations do.
  std::vector<float> w(count);
  for (int64_t k = 0; k < count; ++k) w[k] = Initial(k);
  const float scale = static_cast<float>(1.0 / slices);
  const float neg_lr = static_cast<float>(-lr);
  for (int64_t s = 0; s < version; ++s) {
    int64_t c = 0;
    for (int slice = 0; slice < slices; ++slice) c += Coefficient(s, slice);
    const float sum = static_cast<float>(c);
    for (int64_t k = 0; k < count; ++k) w[k] = w[k] + ((sum * Shape(k)) * scale) * neg_lr;
  }
  return w;
}

Mismatch Compare(const std::vector<float>& got, const std::vector<float>& want, size_t limit) {
  Mismatch m;
  if (got.size() != want.size()) {
    m.count = -1;
    return m;
  }
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k] == want[k]) continue;
    ++m.count;
    if (m.keys.size() < limit) m.keys.push_back(static_cast<int64_t>(k));
    m.max_abs = std::max(m.max_abs, std::fabs(static_cast<double>(got[k]) - want[k]));
  }
  return m;
}

}  // namespace tteps::sim
