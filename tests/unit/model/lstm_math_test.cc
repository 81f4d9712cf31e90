// The CPU LSTM's own exp, sigmoid and tanh against the C library's, and the cell's forward and
// backward against the formulas written out in double: for every instruction set this CPU runs
// (SSE2 everywhere, AVX2 + FMA where the CPU has them).
#include "model/deeptte/lstm_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "model/deeptte/cpu_isa.h"

namespace tteps::deeptte::lstm_math {
namespace {

// Arguments from -30 to 30, dense near 0 (where tanh is most delicate), and the extremes.
std::vector<float> Arguments() {
  std::vector<float> x = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, 100.0f, -100.0f, 88.0f, -87.0f};
  for (int i = -300000; i <= 300000; ++i) x.push_back(i * 1e-4f);
  for (int i = -1000; i <= 1000; ++i) x.push_back(i * 1e-7f);
  return x;
}

double RelativeError(double got, double want) {
  return std::abs(got - want) / std::max(std::abs(want), 1e-30);
}

TEST(LstmMath, TheBestKernelsAreOnesThisCpuRuns) {
  const auto here = CellKernelsHere();
  ASSERT_FALSE(here.empty());
  EXPECT_STREQ(here.front()->isa, "sse2");
  // The active set is the capped instruction set's (cpu_isa.h), SSE2 for "generic".
  const std::string active = CpuIsaName(ActiveCpuIsa());
  EXPECT_EQ(ActiveCellKernels().isa, active == "generic" ? "sse2" : active);
  std::printf("cell kernels here:");
  for (const auto* k : here) std::printf(" %s (%d lanes)", k->isa, k->lanes);
  std::printf("\n");
}

TEST(LstmMath, SigmoidAndTanhWithinAFewFloatRoundings) {
  const std::vector<float> x = Arguments();
  for (const auto* kernels : CellKernelsHere()) {
    SCOPED_TRACE(kernels->isa);
    std::vector<float> s = x, t = x;  // an odd count: the last lanes go through the partial path
    kernels->sigmoid(s.data(), s.size());
    kernels->tanh(t.data(), t.size());
    double worst_s = 0, worst_t = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      worst_s = std::max(worst_s, RelativeError(s[i], 1.0 / (1.0 + std::exp(-v))));
      worst_t = std::max(worst_t, RelativeError(t[i], std::tanh(v)));
    }
    // A float's rounding is 6e-8 relative.
    EXPECT_LT(worst_s, 4e-7);
    EXPECT_LT(worst_t, 4e-7);
    EXPECT_EQ(t[0], 0.0f);
  }
}

// The cell on random values against the formulas in double; `add` (the trip's part of the
// projection), dh_next and d_sum given or not.
void CheckCell(const CellKernels& kernels, bool with_add, bool with_next) {
  const int64_t hidden = 13;  // not a multiple of 4 or 8: one partial group of lanes
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> gates(4 * hidden), add(4 * hidden), c_prev(hidden), dh(hidden),
      dh_next(hidden), dc(hidden), d_sum(4 * hidden);
  for (auto* v : {&gates, &add, &c_prev, &dh, &dh_next, &dc, &d_sum}) {
    for (auto& e : *v) e = normal(rng);
  }
  std::vector<float> pre = gates;
  if (with_add) {
    for (int64_t j = 0; j < 4 * hidden; ++j) pre[j] += add[j];
  }
  const std::vector<float> dc_in = dc, sum_in = d_sum;
  std::vector<float> c(hidden), tanh_c(hidden), h(hidden), d_gates(4 * hidden);
  std::vector<float> h_copy(hidden);
  kernels.forward(gates.data(), with_add ? add.data() : nullptr, c_prev.data(), c.data(),
                  tanh_c.data(), h.data(), h_copy.data(), hidden);
  EXPECT_EQ(h_copy, h);
  kernels.backward(gates.data(), c_prev.data(), tanh_c.data(), dh.data(),
                   with_next ? dh_next.data() : nullptr, dc.data(), d_gates.data(), d_sum.data(),
                   hidden);
  const auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t j = 0; j < hidden; ++j) {
    const double i = sig(pre[j]), f = sig(pre[hidden + j]), g = std::tanh(pre[2 * hidden + j]);
    const double o = sig(pre[3 * hidden + j]);
    const double cell = f * c_prev[j] + i * g, tc = std::tanh(cell);
    EXPECT_NEAR(c[j], cell, 1e-6 * std::max(1.0, std::abs(cell)));
    EXPECT_NEAR(h[j], o * tc, 1e-6);
    const double grad_h = dh[j] + (with_next ? dh_next[j] : 0.0);
    const double grad_c = dc_in[j] + grad_h * o * (1 - tc * tc);
    const double want[4] = {grad_c * g * i * (1 - i), grad_c * c_prev[j] * f * (1 - f),
                            grad_c * i * (1 - g * g), grad_h * tc * o * (1 - o)};
    for (int k = 0; k < 4; ++k) {
      const double tol = 1e-5 * std::max(1.0, std::abs(want[k]));
      EXPECT_NEAR(d_gates[k * hidden + j], want[k], tol) << "gate " << k << " unit " << j;
      EXPECT_EQ(d_sum[k * hidden + j], sum_in[k * hidden + j] + d_gates[k * hidden + j]);
    }
    EXPECT_NEAR(dc[j], grad_c * f, 1e-5 * std::max(1.0, std::abs(grad_c)));
  }
  // Without a previous cell state (the first step) the cell is i * g.
  std::vector<float> first = gates;
  std::copy(pre.begin(), pre.end(), first.begin());
  kernels.forward(first.data(), nullptr, nullptr, c.data(), tanh_c.data(), h.data(), nullptr,
                  hidden);
  EXPECT_NEAR(c[0], sig(pre[0]) * std::tanh(pre[2 * hidden]), 1e-6);
}

TEST(LstmMath, CellForwardAndBackwardFollowTheFormulas) {
  for (const auto* kernels : CellKernelsHere()) {
    for (bool with_add : {false, true}) {
      for (bool with_next : {false, true}) {
        SCOPED_TRACE(std::string(kernels->isa) + (with_add ? " add" : "") +
                     (with_next ? " dh_next" : ""));
        CheckCell(*kernels, with_add, with_next);
      }
    }
  }
}

// Every instruction set computes the same cell bit for bit (the same operations per lane).
TEST(LstmMath, EveryInstructionSetAgrees) {
  const auto here = CellKernelsHere();
  if (here.size() < 2) GTEST_SKIP() << "this CPU runs only " << here.front()->isa;
  const int64_t hidden = 128, rows = 64;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> pre(rows * 4 * hidden), c_prev(rows * hidden);
  for (auto* v : {&pre, &c_prev}) {
    for (auto& e : *v) e = normal(rng);
  }
  std::vector<std::vector<float>> h_of;
  for (const auto* kernels : here) {
    std::vector<float> gates = pre, c(rows * hidden), tc(rows * hidden), h(rows * hidden);
    for (int64_t r = 0; r < rows; ++r) {
      kernels->forward(gates.data() + r * 4 * hidden, nullptr, c_prev.data() + r * hidden,
                       c.data() + r * hidden, tc.data() + r * hidden, h.data() + r * hidden,
                       nullptr, hidden);
    }
    h_of.push_back(h);
  }
  for (size_t k = 1; k < here.size(); ++k) {
    for (size_t j = 0; j < h_of[0].size(); ++j)
      ASSERT_EQ(h_of[k][j], h_of[0][j]) << here[k]->isa << " " << j;
  }
}

}  // namespace
}  // namespace tteps::deeptte::lstm_math
