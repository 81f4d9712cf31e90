// The LSTM cell's pointwise arithmetic on float rows, for the CPU LSTM (cpu_lstm.cc): the gate
// nonlinearities, the cell update and their derivatives, one pass over a row instead of a dozen
// tensor operations. Torch-free.
//
// The same code (lstm_math_lanes.h) is built for three instruction sets: SSE2, four lanes, which
// every x86-64 has; AVX2 with FMA, eight lanes; AVX-512 with FMA, sixteen lanes; the last two
// each in a file of its own built with those flags, chosen at run time (cpu_isa.h). Every lane
// computes the same operations in the same order, so the results are the same bit for bit on
// every instruction set.
//
// exp, sigmoid and tanh are our own: a degree-7 Taylor polynomial of exp after range reduction
// by powers of 2 (relative error below 1e-7, one float rounding), and tanh |x| from e^-2|x| - 1
// computed without its constant term (accurate near 0, where 1 - 2 / (e^2x + 1) would cancel).
// lstm_math_test checks every instruction set this CPU has against std::exp, std::tanh and the
// cell's formulas in double.
#pragma once

#include <cstdint>
#include <vector>

namespace tteps::deeptte::lstm_math {

struct CellKernels {
  const char* isa;  // "sse2", "avx2" or "avx512"
  int lanes;

  // In place over n floats (any n).
  void (*sigmoid)(float* x, int64_t n);
  void (*tanh)(float* x, int64_t n);

  // One row of one time step, forward. gates: the row's 4H pre-activations in PyTorch's order
  // (input, forget, cell, output), replaced by their activations after `add` (4H, or null: the
  // trip's part of the projection and the biases) is added. c_prev: the previous cell state, or
  // null at the first step. Writes the cell state c, tanh(c) and the output h, and h again at
  // h_copy unless null (the next step's input row: a second store instead of a copy).
  void (*forward)(float* gates, const float* add, const float* c_prev, float* c, float* tanh_c,
                  float* h, float* h_copy, int64_t hidden);

  // One row of one time step, backward. acts: the activations `forward` left; tanh_c as it
  // wrote; the gradient reaching h is dh_out + dh_next (from the output and from the next step;
  // dh_next may be null); dc: in, the gradient reaching c from the next step, out, the one
  // reaching c_prev. Writes d_gates, the gradient of the 4H pre-activations, and adds it to
  // d_sum (4H, or null).
  void (*backward)(const float* acts, const float* c_prev, const float* tanh_c, const float* dh_out,
                   const float* dh_next, float* dc, float* d_gates, float* d_sum, int64_t hidden);
};

// The kernels of ActiveCpuIsa() (chosen once).
const CellKernels& ActiveCellKernels();

// Every kernel set this CPU runs, narrowest first: for the tests.
std::vector<const CellKernels*> CellKernelsHere();

}  // namespace tteps::deeptte::lstm_math
