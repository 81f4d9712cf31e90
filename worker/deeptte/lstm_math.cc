#include "worker/deeptte/lstm_math.h"

#include <algorithm>

namespace tteps::deeptte::lstm_math {
namespace {

// The first k (< 4) floats at p, the rest zero; and back.
F4 LoadPart(const float* p, int64_t k) {
  F4 v = Splat(0.0f);
  std::memcpy(&v, p, k * sizeof(float));
  return v;
}
void StorePart(float* p, F4 v, int64_t k) { std::memcpy(p, &v, k * sizeof(float)); }

// Calls f(j, width) over [0, n) in steps of 4, the last one maybe narrower.
template <typename F>
void ForLanes(int64_t n, F f) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) f(j, 4);
  if (j < n) f(j, n - j);
}

F4 Get(const float* p, int64_t k) { return k == 4 ? Load(p) : LoadPart(p, k); }
void Put(float* p, F4 v, int64_t k) {
  if (k == 4) {
    Store(p, v);
  } else {
    StorePart(p, v, k);
  }
}

}  // namespace

void SigmoidInPlace(float* x, int64_t n) {
  ForLanes(n, [&](int64_t j, int64_t k) { Put(x + j, Sigmoid(Get(x + j, k)), k); });
}

void TanhInPlace(float* x, int64_t n) {
  ForLanes(n, [&](int64_t j, int64_t k) { Put(x + j, Tanh(Get(x + j, k)), k); });
}

void CellForward(float* gates, const float* c_prev, float* c, float* tanh_c, float* h,
                 int64_t hidden) {
  float* gi = gates;
  float* gf = gates + hidden;
  float* gg = gates + 2 * hidden;
  float* go = gates + 3 * hidden;
  ForLanes(hidden, [&](int64_t j, int64_t k) {
    const F4 i = Sigmoid(Get(gi + j, k)), f = Sigmoid(Get(gf + j, k));
    const F4 g = Tanh(Get(gg + j, k)), o = Sigmoid(Get(go + j, k));
    const F4 cell = c_prev ? f * Get(c_prev + j, k) + i * g : i * g;
    const F4 tc = Tanh(cell);
    Put(gi + j, i, k);
    Put(gf + j, f, k);
    Put(gg + j, g, k);
    Put(go + j, o, k);
    Put(c + j, cell, k);
    Put(tanh_c + j, tc, k);
    Put(h + j, o * tc, k);
  });
}

void CellBackward(const float* acts, const float* c_prev, const float* tanh_c, const float* dh,
                  float* dc, float* d_gates, int64_t hidden) {
  const float* ai = acts;
  const float* af = acts + hidden;
  const float* ag = acts + 2 * hidden;
  const float* ao = acts + 3 * hidden;
  float* di = d_gates;
  float* df = d_gates + hidden;
  float* dg = d_gates + 2 * hidden;
  float* d_o = d_gates + 3 * hidden;
  const F4 one = Splat(1.0f);
  ForLanes(hidden, [&](int64_t j, int64_t k) {
    const F4 i = Get(ai + j, k), f = Get(af + j, k), g = Get(ag + j, k), o = Get(ao + j, k);
    const F4 tc = Get(tanh_c + j, k), grad_h = Get(dh + j, k);
    const F4 grad_c = Get(dc + j, k) + grad_h * o * (one - tc * tc);
    const F4 cp = c_prev ? Get(c_prev + j, k) : Splat(0.0f);
    Put(di + j, grad_c * g * i * (one - i), k);
    Put(df + j, grad_c * cp * f * (one - f), k);
    Put(dg + j, grad_c * i * (one - g * g), k);
    Put(d_o + j, grad_h * tc * o * (one - o), k);
    Put(dc + j, grad_c * f, k);
  });
}

}  // namespace tteps::deeptte::lstm_math
