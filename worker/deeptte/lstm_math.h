// The LSTM cell's pointwise arithmetic on float rows, for the CPU LSTM (cpu_lstm.cc): the gate
// nonlinearities, the cell update and their derivatives, one pass over a row instead of a dozen
// tensor operations. Torch-free. Four lanes at a time with GCC's vector extensions (SSE2, which
// every x86-64 has), so no build flags are needed.
//
// exp, sigmoid and tanh are our own: a degree-7 Taylor polynomial of exp after range reduction
// by powers of 2 (relative error below 1e-7, one float rounding), and for tanh near 0 its odd
// Taylor series, where 1 - 2 / (e^2x + 1) would cancel. lstm_math_test checks them against
// std::exp and std::tanh.
#pragma once

#include <cstdint>
#include <cstring>

namespace tteps::deeptte::lstm_math {

typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));

inline F4 Load(const float* p) {
  F4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store(float* p, F4 v) { std::memcpy(p, &v, sizeof v); }
inline F4 Splat(float x) { return F4{x, x, x, x}; }

inline F4 Exp(F4 x) {
  x = x < Splat(-87.0f) ? Splat(-87.0f) : x;
  x = x > Splat(88.0f) ? Splat(88.0f) : x;
  // n = round(x / ln 2), by the float rounding of adding 1.5 * 2^23; r = x - n ln 2 in two parts.
  const F4 shifter = Splat(12582912.0f);
  const F4 n = (x * Splat(1.44269504088896341f) + shifter) - shifter;
  const F4 r = (x - n * Splat(0.693359375f)) - n * Splat(-2.12194440e-4f);
  F4 p = Splat(1.0f / 5040);
  p = p * r + Splat(1.0f / 720);
  p = p * r + Splat(1.0f / 120);
  p = p * r + Splat(1.0f / 24);
  p = p * r + Splat(1.0f / 6);
  p = p * r + Splat(0.5f);
  p = p * r + Splat(1.0f);
  p = p * r + Splat(1.0f);
  const I4 bits = (__builtin_convertvector(n, I4) + 127) << 23;  // 2^n
  return p * (F4)bits;
}

inline F4 Sigmoid(F4 x) { return Splat(1.0f) / (Splat(1.0f) + Exp(-x)); }

inline F4 Tanh(F4 x) {
  const F4 a = x < Splat(0.0f) ? -x : x;
  const F4 clamped = a > Splat(9.0f) ? Splat(9.0f) : a;
  const F4 far = Splat(1.0f) - Splat(2.0f) / (Exp(clamped + clamped) + Splat(1.0f));
  // Near 0: x - x^3/3 + 2x^5/15 - ... to x^13; below 0.4 the next term is under 2e-9.
  const F4 s = a * a;
  F4 p = Splat(21844.0f / 6081075);
  p = p * s - Splat(1382.0f / 155925);
  p = p * s + Splat(62.0f / 2835);
  p = p * s - Splat(17.0f / 315);
  p = p * s + Splat(2.0f / 15);
  p = p * s - Splat(1.0f / 3);
  const F4 near = a + a * s * p;
  const F4 t = a < Splat(0.4f) ? near : far;
  return x < Splat(0.0f) ? -t : t;
}

// In place over n floats (n a multiple of 4 or not): for the tests and the odd tail.
void SigmoidInPlace(float* x, int64_t n);
void TanhInPlace(float* x, int64_t n);

// One row of one time step, forward. gates: the row's 4H pre-activations in PyTorch's order
// (input, forget, cell, output), replaced by their activations. c_prev: the previous cell
// state, or null at the first step. Writes the cell state c, tanh(c) and the output h.
void CellForward(float* gates, const float* c_prev, float* c, float* tanh_c, float* h,
                 int64_t hidden);

// One row of one time step, backward. acts: the activations CellForward left; tanh_c as it
// wrote; dh: the gradient reaching h (from the output and from the next step); dc: in, the
// gradient reaching c from the next step, out, the one reaching c_prev. Writes d_gates, the
// gradient of the 4H pre-activations.
void CellBackward(const float* acts, const float* c_prev, const float* tanh_c, const float* dh,
                  float* dc, float* d_gates, int64_t hidden);

}  // namespace tteps::deeptte::lstm_math
