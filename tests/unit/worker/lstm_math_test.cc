// The CPU LSTM's own exp, sigmoid and tanh against the C library's, and the cell's forward and
// backward against the formulas written out in double.
#include "worker/deeptte/lstm_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

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

TEST(LstmMath, SigmoidAndTanhWithinAFewFloatRoundings) {
  const std::vector<float> x = Arguments();
  std::vector<float> s = x, t = x;  // an odd count: the last lanes go through the partial path
  SigmoidInPlace(s.data(), s.size());
  TanhInPlace(t.data(), t.size());
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

TEST(LstmMath, CellForwardAndBackwardFollowTheFormulas) {
  const int64_t hidden = 7;  // not a multiple of 4: one partial group of lanes
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> gates(4 * hidden), c_prev(hidden), dh(hidden), dc(hidden);
  for (auto* v : {&gates, &c_prev, &dh, &dc}) {
    for (auto& e : *v) e = normal(rng);
  }
  const std::vector<float> pre = gates, dc_in = dc;
  std::vector<float> c(hidden), tanh_c(hidden), h(hidden), d_gates(4 * hidden);
  CellForward(gates.data(), c_prev.data(), c.data(), tanh_c.data(), h.data(), hidden);
  CellBackward(gates.data(), c_prev.data(), tanh_c.data(), dh.data(), dc.data(), d_gates.data(),
               hidden);
  const auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t j = 0; j < hidden; ++j) {
    const double i = sig(pre[j]), f = sig(pre[hidden + j]), g = std::tanh(pre[2 * hidden + j]);
    const double o = sig(pre[3 * hidden + j]);
    const double cell = f * c_prev[j] + i * g, tc = std::tanh(cell);
    EXPECT_NEAR(c[j], cell, 1e-6 * std::max(1.0, std::abs(cell)));
    EXPECT_NEAR(h[j], o * tc, 1e-6);
    const double grad_c = dc_in[j] + dh[j] * o * (1 - tc * tc);
    const double want[4] = {grad_c * g * i * (1 - i), grad_c * c_prev[j] * f * (1 - f),
                            grad_c * i * (1 - g * g), dh[j] * tc * o * (1 - o)};
    for (int k = 0; k < 4; ++k) {
      EXPECT_NEAR(d_gates[k * hidden + j], want[k], 1e-5 * std::max(1.0, std::abs(want[k])))
          << "gate " << k << " unit " << j;
    }
    EXPECT_NEAR(dc[j], grad_c * f, 1e-5 * std::max(1.0, std::abs(grad_c)));
  }
  // Without a previous cell state (the first step) the cell is i * g.
  std::vector<float> first = pre;
  CellForward(first.data(), nullptr, c.data(), tanh_c.data(), h.data(), hidden);
  EXPECT_NEAR(c[0], sig(pre[0]) * std::tanh(pre[2 * hidden]), 1e-6);
}

}  // namespace
}  // namespace tteps::deeptte::lstm_math
