// The step's noise meter in the plain and in Adam's geometry (worker/step_noise.h).
#include "worker/step_noise.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

namespace tteps {
namespace {

// Two parameters whose gradients a test sets by hand.
struct Params : torch::nn::Module {
  Params() {
    a = register_parameter("a", torch::zeros({3}, torch::kFloat64));
    b = register_parameter("b", torch::zeros({2}, torch::kFloat64));
  }
  void SetGrad(const std::vector<double>& g) {
    a.mutable_grad() = torch::tensor({g[0], g[1], g[2]}, torch::kFloat64);
    b.mutable_grad() = torch::tensor({g[3], g[4]}, torch::kFloat64);
  }
  torch::Tensor a, b;
};

std::vector<double> Times(const std::vector<double>& g, double n) {
  std::vector<double> out;
  for (double x : g) out.push_back(x * n);
  return out;
}

// The values of a 1-d double tensor, for Params::SetGrad.
std::vector<double> Values(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// n trips' gradients of the five weights: two of large gradients, each with a signal (per trip:
// G = sigma / 4, a noise scale of 16 trips), and three of small ones that are pure noise.
torch::Tensor DrawTrips(int64_t n) {
  const auto sigma = torch::tensor({100.0, 100.0, 1.0, 1.0, 1.0}, torch::kFloat64);
  const auto signal = torch::tensor({25.0, -25.0, 0.0, 0.0, 0.0}, torch::kFloat64);
  return torch::randn({n, 5}, torch::kFloat64) * sigma + signal;
}

// Every trip's gradient is G: the step of 12 trips sums to 12 G, its first micro-batch of 4 to
// 4 G. Plain: |G|^2 and no noise, as EstimateNoise says; one micro-batch measures nothing.
TEST(StepNoiseMeter, PlainGeometryMeasuresThePlainGradient) {
  Params m;
  const std::vector<double> g = {3, 0, 0, 4, 0};
  StepNoiseMeter meter(false, 0.999, 1e-8);
  m.SetGrad(Times(g, 4));
  meter.FirstMicroBatch(m, 4);
  m.SetGrad(Times(g, 12));
  const auto e = meter.EndOfStep(m, 12);
  ASSERT_TRUE(e.has_value());
  EXPECT_NEAR(e->grad_sq, 25.0, 1e-9);
  EXPECT_NEAR(e->trace, 0.0, 1e-9);
  EXPECT_FALSE(meter.EndOfStep(m, 12).has_value());  // a step of one micro-batch
}

// Adam divides each weight's gradient by the root of its second moment, so in its geometry a
// noise-free gradient measures the same whatever the scale of each weight's: no noise, and the
// true gradient as large as the steps' mean gradient (1 in that unit), also where some weights'
// gradients are 1000x larger. The first two steps measure nothing (no v to divide by, then no
// earlier step to give the unit).
TEST(StepNoiseMeter, AdamGeometryIsBlindToEachWeightsScale) {
  for (double scale : {1.0, 1000.0}) {
    Params m;
    StepNoiseMeter meter(true, 0.999, 1e-12);
    const std::vector<double> g = {1, -2, 0.5, 3 * scale, -scale};
    for (int step = 0; step < 5; ++step) {
      m.SetGrad(Times(g, 4));
      meter.FirstMicroBatch(m, 4);
      m.SetGrad(Times(g, 12));
      const auto e = meter.EndOfStep(m, 12);
      if (step < 2) {
        EXPECT_FALSE(e.has_value()) << "step " << step;
        continue;
      }
      ASSERT_TRUE(e.has_value());
      EXPECT_NEAR(e->grad_sq, 1.0, 1e-6) << "scale " << scale << ", step " << step;
      EXPECT_NEAR(e->trace, 0.0, 1e-5) << "scale " << scale << ", step " << step;
    }
  }
}

// A parameter whose gradient appears only from the second step on (a module used later) is left
// out until it has a second moment, then counted with its own bias correction: at step 2 the
// noise-free gradient moves 5 weights, in units of step 1's, which moved 3.
TEST(StepNoiseMeter, AdamGeometryTakesAParameterWhoseGradientAppearsLater) {
  Params m;
  StepNoiseMeter meter(true, 0.999, 1e-12);
  const std::vector<double> g = {1, -2, 0.5, 3, -1};
  for (int step = 0; step < 3; ++step) {
    m.SetGrad(Times(g, 4));
    if (step == 0) m.b.mutable_grad() = torch::Tensor();
    meter.FirstMicroBatch(m, 4);
    m.SetGrad(Times(g, 12));
    if (step == 0) m.b.mutable_grad() = torch::Tensor();
    const auto e = meter.EndOfStep(m, 12);
    if (step < 2) {
      EXPECT_FALSE(e.has_value()) << "step " << step;
      continue;
    }
    ASSERT_TRUE(e.has_value());
    EXPECT_NEAR(e->grad_sq, 5.0 / 3.0, 1e-6);
    EXPECT_NEAR(e->trace, 0.0, 1e-5);
  }
}

// The trips of DrawTrips: two weights of large gradients with a signal, three of pure noise.
// The plain gradient's noise scale is the large weights': 16 trips. In Adam's geometry every
// weight counts alike, and the noise-only ones add their noise and no signal: with
// v = G^2 + sigma^2 / 32 (the step's 32 trips), the two give |P G|^2 = 2 (2/3) and
// tr(P Sigma P) = 2 (32/3), the three 3 (32): 88 trips.
TEST(StepNoiseMeter, AdamGeometryCountsTheNoiseOfEveryWeight) {
  for (const bool adam : {false, true}) {
    Params m;
    StepNoiseMeter meter(adam, 0.999, 1e-8);
    torch::manual_seed(3);
    NoiseSum sum;
    for (int step = 0; step < 3000; ++step) {
      const auto trips = DrawTrips(32);
      m.SetGrad(Values(trips.slice(0, 0, 8).sum(0)));
      meter.FirstMicroBatch(m, 8);
      m.SetGrad(Values(trips.sum(0)));
      if (const auto e = meter.EndOfStep(m, 32)) sum.Add(*e);
    }
    const double expected = adam ? 88.0 : 16.0;
    EXPECT_NEAR(NoiseScale(sum.Mean()), expected, 0.2 * expected) << (adam ? "adam" : "plain");
  }
}

// A job that moves between accumulation 1 and more: steps of one micro-batch fold into Adam's v
// only every eighth time, standing for the steps in between, so the measured steps in between
// still see a second moment of the whole history, and measure the same noise scale as above
// (88 trips) in runs of 5 measured steps after 13 of one micro-batch each.
TEST(StepNoiseMeter, StepsOfOneMicroBatchKeepAdamsSecondMomentForTheMeasuredOnes) {
  Params m;
  StepNoiseMeter meter(true, 0.999, 1e-8);
  torch::manual_seed(3);
  NoiseSum sum;
  int measured = 0;
  for (int step = 0; step < 9000; ++step) {
    const auto trips = DrawTrips(32);
    const bool accumulates = step % 18 >= 13;
    if (accumulates) {
      m.SetGrad(Values(trips.slice(0, 0, 8).sum(0)));
      meter.FirstMicroBatch(m, 8);
    }
    m.SetGrad(Values(trips.sum(0)));
    const auto e = meter.EndOfStep(m, 32);
    EXPECT_EQ(e.has_value() && !accumulates, false) << "step " << step;
    if (e) {
      sum.Add(*e);
      ++measured;
    }
  }
  EXPECT_GT(measured, 2000);
  EXPECT_NEAR(NoiseScale(sum.Mean()), 88.0, 0.2 * 88.0);
}

}  // namespace
}  // namespace tteps
