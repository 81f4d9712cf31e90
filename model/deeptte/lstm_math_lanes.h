// The cell kernels of lstm_math.h written once over a GCC vector type V of float lanes; each
// instruction set's file includes this and instantiates it (lstm_math.cc: SSE2, four lanes;
// lstm_math_avx2.cc: AVX2 + FMA, eight lanes; lstm_math_avx512.cc: sixteen). Everything here
// has internal linkage and uses no library templates: code built with -mavx2 must never be
// merged by the linker into code that runs on CPUs without it.
#pragma once

#include <cstring>

#include "model/deeptte/lstm_math.h"

namespace tteps::deeptte::lstm_math {
namespace {  // NOLINT(build/namespaces): one copy per instruction set, by design

template <typename V>
constexpr int64_t kLanes = sizeof(V) / sizeof(float);

template <typename V>
inline V Splat(float x) {
  return V{} + x;
}

// The first k floats at p (k <= the lanes; the rest zero), and back.
template <typename V>
inline V Get(const float* p, int64_t k) {
  V v = V{};
  std::memcpy(&v, p, k == kLanes<V> ? sizeof v : k * sizeof(float));
  return v;
}
template <typename V>
inline void Put(float* p, V v, int64_t k) {
  std::memcpy(p, &v, k == kLanes<V> ? sizeof v : k * sizeof(float));
}

// x = n ln 2 + r with |r| <= ln 2 / 2: returns n, by the float rounding of adding 1.5 * 2^23, and
// sets r, computed with ln 2 in two parts.
template <typename V>
inline V ReduceByLn2(V x, V* r) {
  const V shifter = Splat<V>(12582912.0f);
  const V n = (x * Splat<V>(1.44269504088896341f) + shifter) - shifter;
  *r = (x - n * Splat<V>(0.693359375f)) - n * Splat<V>(-2.12194440e-4f);
  return n;
}

// e^r = 1 + r + r^2 (1/2 + r/6 + ... + r^5/5040): the last factor, by Horner's rule.
template <typename V>
inline V ExpTail(V r) {
  V p = Splat<V>(1.0f / 5040);
  p = p * r + Splat<V>(1.0f / 720);
  p = p * r + Splat<V>(1.0f / 120);
  p = p * r + Splat<V>(1.0f / 24);
  p = p * r + Splat<V>(1.0f / 6);
  return p * r + Splat<V>(0.5f);
}

// 2^n for an integral n in [-126, 127], as a float's exponent bits.
template <typename V>
inline V TwoTo(V n) {
  using I = decltype(n < n);  // the integer vector of the same lanes
  return (V)((__builtin_convertvector(n, I) + 127) << 23);
}

template <typename V>
inline V Exp(V x) {
  x = x < Splat<V>(-87.0f) ? Splat<V>(-87.0f) : x;
  x = x > Splat<V>(88.0f) ? Splat<V>(88.0f) : x;
  V r;
  const V n = ReduceByLn2(x, &r);
  V p = ExpTail(r);
  p = p * r + Splat<V>(1.0f);
  p = p * r + Splat<V>(1.0f);
  return p * TwoTo(n);
}

template <typename V>
inline V Sigmoid(V x) {
  return Splat<V>(1.0f) / (Splat<V>(1.0f) + Exp(-x));
}

// e^y - 1 for y <= 0, to a few float roundings of itself also near 0 (where e^y - 1 cancels):
// with y = n ln 2 + r, 2^n (e^r - 1) + (2^n - 1), where e^r - 1 = r + r^2 ExpTail(r) has no
// constant term to cancel against.
template <typename V>
inline V Expm1NonPositive(V y) {
  y = y < Splat<V>(-87.0f) ? Splat<V>(-87.0f) : y;
  V r;
  const V two_n = TwoTo(ReduceByLn2(y, &r));
  return two_n * (ExpTail(r) * (r * r) + r) + (two_n - Splat<V>(1.0f));
}

// tanh |x| = (1 - e^-2|x|) / (1 + e^-2|x|) = -t / (2 + t) with t = e^-2|x| - 1: accurate near 0
// without a second formula; x's sign bit is put back on.
template <typename V>
inline V Tanh(V x) {
  using I = decltype(x < x);
  const I bits = (I)x;
  const I magnitude = bits & 0x7fffffff;
  const I sign = bits ^ magnitude;
  const V t = Expm1NonPositive((V)magnitude * Splat<V>(-2.0f));
  const V m = (Splat<V>(0.0f) - t) / (Splat<V>(2.0f) + t);  // 0 - t: tanh(0) = +0
  return (V)((I)m ^ sign);
}

// Calls f(j, k) over [0, n) in groups of k = all lanes, the last group maybe narrower.
template <typename V, typename F>
inline void ForLanes(int64_t n, F f) {
  int64_t j = 0;
  for (; j + kLanes<V> <= n; j += kLanes<V>) f(j, kLanes<V>);
  if (j < n) f(j, n - j);
}

template <typename V>
void SigmoidInPlace(float* x, int64_t n) {
  ForLanes<V>(n, [&](int64_t j, int64_t k) { Put(x + j, Sigmoid(Get<V>(x + j, k)), k); });
}

template <typename V>
void TanhInPlace(float* x, int64_t n) {
  ForLanes<V>(n, [&](int64_t j, int64_t k) { Put(x + j, Tanh(Get<V>(x + j, k)), k); });
}

template <typename V>
void CellForward(float* gates, const float* add, const float* c_prev, float* c, float* tanh_c,
                 float* h, float* h_copy, int64_t hidden) {
  float* g4[4] = {gates, gates + hidden, gates + 2 * hidden, gates + 3 * hidden};
  ForLanes<V>(hidden, [&](int64_t j, int64_t k) {
    V pre[4];
    for (int q = 0; q < 4; ++q) {
      pre[q] = Get<V>(g4[q] + j, k);
      if (add) pre[q] += Get<V>(add + q * hidden + j, k);
    }
    const V i = Sigmoid(pre[0]), f = Sigmoid(pre[1]), g = Tanh(pre[2]), o = Sigmoid(pre[3]);
    const V cell = c_prev ? f * Get<V>(c_prev + j, k) + i * g : i * g;
    const V tc = Tanh(cell);
    Put(g4[0] + j, i, k);
    Put(g4[1] + j, f, k);
    Put(g4[2] + j, g, k);
    Put(g4[3] + j, o, k);
    Put(c + j, cell, k);
    Put(tanh_c + j, tc, k);
    Put(h + j, o * tc, k);
    if (h_copy) Put(h_copy + j, o * tc, k);
  });
}

template <typename V>
void CellBackward(const float* acts, const float* c_prev, const float* tanh_c, const float* dh_out,
                  const float* dh_next, float* dc, float* d_gates, float* d_sum, int64_t hidden) {
  const V one = Splat<V>(1.0f);
  ForLanes<V>(hidden, [&](int64_t j, int64_t k) {
    const V i = Get<V>(acts + j, k), f = Get<V>(acts + hidden + j, k);
    const V g = Get<V>(acts + 2 * hidden + j, k), o = Get<V>(acts + 3 * hidden + j, k);
    const V tc = Get<V>(tanh_c + j, k);
    const V grad_h =
        dh_next ? Get<V>(dh_out + j, k) + Get<V>(dh_next + j, k) : Get<V>(dh_out + j, k);
    const V grad_c = Get<V>(dc + j, k) + grad_h * o * (one - tc * tc);
    const V cp = c_prev ? Get<V>(c_prev + j, k) : Splat<V>(0.0f);
    const V d[4] = {grad_c * g * i * (one - i), grad_c * cp * f * (one - f),
                    grad_c * i * (one - g * g), grad_h * tc * o * (one - o)};
    for (int q = 0; q < 4; ++q) {
      Put(d_gates + q * hidden + j, d[q], k);
      if (d_sum) Put(d_sum + q * hidden + j, Get<V>(d_sum + q * hidden + j, k) + d[q], k);
    }
    Put(dc + j, grad_c * f, k);
  });
}

template <typename V>
constexpr CellKernels MakeCellKernels(const char* isa) {
  return {isa,
          static_cast<int>(kLanes<V>),
          &SigmoidInPlace<V>,
          &TanhInPlace<V>,
          &CellForward<V>,
          &CellBackward<V>};
}

}  // namespace
}  // namespace tteps::deeptte::lstm_math
