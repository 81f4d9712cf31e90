#include "bench/sim/synthetic.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace tteps::sim {
namespace {

// `spans`, or the whole [0, count) when empty.
std::vector<KeyRange> OrAll(const std::vector<KeyRange>& spans, int64_t count) {
  return spans.empty() ? std::vector<KeyRange>{{0, count}} : spans;
}

}  // namespace

float Initial(int64_t k) { return static_cast<float>(k % 5) - 2.f; }

float Shape(int64_t k) { return static_cast<float>((k * 7) % 8) - 4.f; }

int Coefficient(int64_t step, int slice) {
  return static_cast<int>((step * 5 + static_cast<int64_t>(slice) * 3 + 1) % 7) - 3;
}

std::vector<Gradient> GradientsByCoefficient(int64_t count) {
  std::vector<Gradient> out;
  for (int c = -3; c <= 3; ++c) {
    auto g = std::make_shared<std::vector<float>>(count);
    for (int64_t k = 0; k < count; ++k) (*g)[k] = static_cast<float>(c) * Shape(k);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<KeyRange> PushedKeys(const std::vector<KeyRange>& ranges, double fraction) {
  if (fraction >= 1) return {};
  std::set<std::pair<int64_t, int64_t>> distinct;  // replicas hold the same range
  for (const KeyRange& r : ranges) {
    const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(fraction * r.size())));
    distinct.emplace(r.begin, std::min(r.end, r.begin + n));
  }
  std::vector<KeyRange> spans;
  for (const auto& [b, e] : distinct) spans.push_back({b, e});
  return spans;
}

std::vector<float> Expected(int64_t count, int64_t version, int slices, double lr,
                            const std::vector<KeyRange>& spans) {
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
    for (const KeyRange& r : OrAll(spans, count)) {
      for (int64_t k = r.begin; k < r.end; ++k) {
        w[k] = w[k] + ((sum * Shape(k)) * scale) * neg_lr;
      }
    }
  }
  return w;
}

namespace {

// The pushes key k's value says were applied to it; -1 if no whole number would give it.
int64_t PushesAt(int64_t k, float value, double lr) {
  const double shape = Shape(k);
  const double moved = static_cast<double>(Initial(k)) - value;
  if (shape == 0) return moved == 0 ? 0 : -1;
  const double n = std::round(moved / (lr * shape));
  if (n < 0) return -1;
  const float want = static_cast<float>(Initial(k) - lr * n * shape);  // exact: small integers
  return want == value ? static_cast<int64_t>(n) : -1;
}

}  // namespace

PushRuns ReadPushes(const std::vector<float>& w, double lr) {
  PushRuns r;
  for (int64_t k = 0; k < static_cast<int64_t>(w.size()); ++k) {
    const int64_t n = PushesAt(k, w[k], lr);
    if (n < 0) {
      if (r.unexplained++ == 0) r.first_unexplained = k;
      continue;
    }
    if (Shape(k) == 0) continue;  // unchanged, as it must be: it says nothing of n
    if (r.runs.empty() || r.runs.back().n != n) r.runs.push_back({k, k, n});
    r.runs.back().end = k + 1;
  }
  return r;
}

Mismatch Compare(const float* got, const std::vector<float>& want,
                 const std::vector<KeyRange>& spans, size_t limit) {
  Mismatch m;
  for (const KeyRange& r : OrAll(spans, static_cast<int64_t>(want.size()))) {
    for (int64_t k = r.begin; k < r.end; ++k) {
      if (got[k] == want[k]) continue;
      ++m.count;
      if (m.keys.size() < limit) m.keys.push_back(k);
      m.max_abs = std::max(m.max_abs, std::fabs(static_cast<double>(got[k]) - want[k]));
    }
  }
  return m;
}

}  // namespace tteps::sim
