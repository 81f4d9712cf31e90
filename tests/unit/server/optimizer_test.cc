// The server's optimizers: the same updates as torch::optim, state round trips, gradient clipping
// and config checks. Only this test uses LibTorch; server/ never does.
#include "server/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "common/numerics.h"

namespace tteps {
namespace server {
namespace {

constexpr size_t kN = 10'007;  // not a multiple of a vector width: the loops' tails run too

std::vector<float> RandomParams(size_t n, std::mt19937* rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(*rng);
  return v;
}

// Gradients of every scale: N(0, 1) times 10^k for k in [-8, 3], with some exact zeros and some
// tiny values whose squares underflow.
std::vector<float> RandomGrad(size_t n, std::mt19937* rng) {
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent(-8, 3);
  std::uniform_int_distribution<int> kind(0, 99);
  std::vector<float> g(n);
  for (float& x : g) {
    const int k = kind(*rng);
    if (k == 0) {
      x = 0;
    } else if (k == 1) {
      x = normal(*rng) * 1e-25f;
    } else {
      x = normal(*rng) * std::pow(10.0f, static_cast<float>(exponent(*rng)));
    }
  }
  return g;
}

torch::Tensor ToTensor(const std::vector<float>& v) {
  return torch::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kFloat)
      .clone();
}

std::unique_ptr<torch::optim::Optimizer> MakeTorchOptimizer(const OptimizerConfig& c,
                                                            torch::Tensor p) {
  if (c.name == "adam") {
    return std::make_unique<torch::optim::Adam>(
        std::vector<torch::Tensor>{p},
        torch::optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps));
  }
  const double momentum = c.name == "momentum" ? c.momentum : 0.0;
  return std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{p},
                                             torch::optim::SGDOptions(c.lr).momentum(momentum));
}

OptimizerConfig Config(const std::string& name, double lr) {
  OptimizerConfig c;
  c.name = name;
  c.lr = lr;
  return c;
}

std::string Describe(const OptimizerConfig& c) {
  char buf[160];
  if (c.name == "momentum") {
    std::snprintf(buf, sizeof(buf), "momentum lr=%g momentum=%g", c.lr, c.momentum);
  } else if (c.name == "adam") {
    std::snprintf(buf, sizeof(buf), "adam lr=%g betas=(%g, %g) eps=%g", c.lr, c.beta1, c.beta2,
                  c.eps);
  } else {
    std::snprintf(buf, sizeof(buf), "%s lr=%g", c.name.c_str(), c.lr);
  }
  return buf;
}

struct TorchComparison {
  double max_rel_diff = 0;  // over every element and every step
  size_t identical = 0;     // elements bit-identical to torch's after the last step
};

// Runs `steps` steps with our optimizer and with torch::optim from the same parameters and
// gradients, and measures how far apart the parameters get.
TorchComparison CompareWithTorch(const OptimizerConfig& c, int steps, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> ours = RandomParams(kN, &rng);
  torch::Tensor theirs = ToTensor(ours).set_requires_grad(true);
  auto optimizer = MakeOptimizer(c, kN);
  auto torch_optimizer = MakeTorchOptimizer(c, theirs);
  // Float rounding errors are relative to the magnitude a value had when it was rounded, and a
  // parameter that crosses zero keeps the absolute error it picked up while it was large. So the
  // difference is measured relative to the largest |p| the element has had (at least 1e-3).
  // Ops that round differently by one ulp now and then (e.g. fused or not) stay far below 1e-6;
  // an error in the math is orders of magnitude above it.
  std::vector<float> peak(kN);
  for (size_t i = 0; i < kN; ++i) peak[i] = std::max(std::abs(ours[i]), 1e-3f);
  TorchComparison result;
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> grad = RandomGrad(kN, &rng);
    optimizer->Step(ours.data(), grad.data());
    theirs.mutable_grad() = ToTensor(grad);
    torch_optimizer->step();
    const float* t = theirs.data_ptr<float>();
    result.identical = 0;
    for (size_t i = 0; i < kN; ++i) {
      peak[i] = std::max(peak[i], std::abs(t[i]));
      const double diff = std::abs(static_cast<double>(ours[i]) - t[i]);
      result.max_rel_diff = std::max(result.max_rel_diff, diff / peak[i]);
      result.identical += std::memcmp(&ours[i], &t[i], sizeof(float)) == 0;
    }
  }
  EXPECT_EQ(optimizer->steps(), steps);
  return result;
}

TEST(Optimizer, MatchesTorchOptim) {
  std::vector<OptimizerConfig> configs = {Config("sgd", 0.1),       Config("sgd", 1e-3),
                                          Config("momentum", 0.05), Config("momentum", 1e-3),
                                          Config("adam", 1e-3),     Config("adam", 1e-2)};
  configs.push_back(Config("momentum", 0.01));
  configs.back().momentum = 0.5;
  configs.push_back(Config("adam", 3e-3));
  configs.back().beta1 = 0.8;
  configs.back().beta2 = 0.99;
  configs.back().eps = 1e-6;
  uint32_t seed = 1;
  for (const auto& c : configs) {
    const TorchComparison r = CompareWithTorch(c, 50, seed++);
    std::printf("[   torch  ] %-40s max rel diff %.3g, bit-identical %zu/%zu\n",
                Describe(c).c_str(), r.max_rel_diff, r.identical, kN);
    EXPECT_LE(r.max_rel_diff, 1e-6) << Describe(c);
  }
}

// 10 steps, State() into a fresh optimizer, then 10 more steps on both: identical bits.
TEST(Optimizer, StateRoundTripContinuesIdentically) {
  for (const std::string name : {"sgd", "momentum", "adam"}) {
    SCOPED_TRACE(name);
    std::mt19937 rng(7);
    const OptimizerConfig c = Config(name, 1e-2);
    auto a = MakeOptimizer(c, kN);
    std::vector<float> pa = RandomParams(kN, &rng);
    for (int step = 0; step < 10; ++step) a->Step(pa.data(), RandomGrad(kN, &rng).data());

    const auto state = a->State();
    std::vector<std::string> names;
    for (const auto& [key, buffer] : state) {
      names.push_back(key);
      EXPECT_EQ(buffer.size(), kN) << key;
    }
    const std::map<std::string, std::vector<std::string>> expected = {
        {"sgd", {}}, {"momentum", {"momentum_buffer"}}, {"adam", {"exp_avg", "exp_avg_sq"}}};
    EXPECT_EQ(names, expected.at(name));

    auto b = MakeOptimizer(c, kN);
    b->Restore(state, a->steps());
    EXPECT_EQ(b->steps(), 10);
    std::vector<float> pb = pa;
    for (int step = 0; step < 10; ++step) {
      const std::vector<float> grad = RandomGrad(kN, &rng);
      a->Step(pa.data(), grad.data());
      b->Step(pb.data(), grad.data());
    }
    EXPECT_EQ(b->steps(), 20);
    EXPECT_EQ(std::memcmp(pa.data(), pb.data(), kN * sizeof(float)), 0);
    const auto sa = a->State(), sb = b->State();
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i].first, sb[i].first);
      EXPECT_EQ(std::memcmp(sa[i].second.data(), sb[i].second.data(), kN * sizeof(float)), 0);
    }
  }
}

TEST(Optimizer, RestoreRejectsMismatchedStateAndKeepsItsOwn) {
  const std::vector<float> ok(5, 1.0f), short_buffer(4, 1.0f);
  auto adam = MakeOptimizer(Config("adam", 1e-3), 5);
  std::vector<float> p(5, 0.0f), g(5, 1.0f);
  adam->Step(p.data(), g.data());
  const auto before = adam->State();
  EXPECT_THROW(adam->Restore({{"exp_avg", ok}, {"exp_avg_sq", short_buffer}}, 1),
               std::invalid_argument);
  EXPECT_THROW(adam->Restore({{"exp_avg", ok}}, 1), std::invalid_argument);
  EXPECT_THROW(adam->Restore({{"exp_avg", ok}, {"exp_avg_sq", ok}, {"momentum_buffer", ok}}, 1),
               std::invalid_argument);
  EXPECT_THROW(adam->Restore({{"exp_avg", ok}, {"exp_avg", ok}, {"exp_avg_sq", ok}}, 1),
               std::invalid_argument);
  EXPECT_THROW(adam->Restore({{"exp_avg", ok}, {"exp_avg_sq", ok}}, -1), std::invalid_argument);
  EXPECT_EQ(adam->steps(), 1);
  EXPECT_EQ(adam->State(), before);
  adam->Restore({{"exp_avg_sq", ok}, {"exp_avg", ok}}, 3);  // order does not matter
  EXPECT_EQ(adam->steps(), 3);

  auto momentum = MakeOptimizer(Config("momentum", 1e-3), 5);
  EXPECT_THROW(momentum->Restore({{"momentum_buffer", short_buffer}}, 1), std::invalid_argument);
  EXPECT_THROW(momentum->Restore({{"exp_avg", ok}}, 1), std::invalid_argument);
  EXPECT_THROW(momentum->Restore({}, 1), std::invalid_argument);

  auto sgd = MakeOptimizer(Config("sgd", 1e-3), 5);
  EXPECT_THROW(sgd->Restore({{"momentum_buffer", ok}}, 1), std::invalid_argument);
  sgd->Restore({}, 4);
  EXPECT_EQ(sgd->steps(), 4);
}

TEST(Optimizer, SetLrAppliesToTheNextStep) {
  auto sgd = MakeOptimizer(Config("sgd", 0.5), 2);
  EXPECT_EQ(sgd->size(), 2u);
  EXPECT_EQ(sgd->steps(), 0);
  std::vector<float> p = {1.0f, -2.0f}, g = {1.0f, 2.0f};
  sgd->Step(p.data(), g.data());
  EXPECT_EQ(p, std::vector<float>({0.5f, -3.0f}));
  sgd->set_lr(0.25);
  EXPECT_EQ(sgd->lr(), 0.25);
  sgd->Step(p.data(), g.data());
  EXPECT_EQ(p, std::vector<float>({0.25f, -3.5f}));
  EXPECT_THROW(sgd->set_lr(-1), std::invalid_argument);
  EXPECT_THROW(sgd->set_lr(std::nan("")), std::invalid_argument);
  EXPECT_EQ(sgd->lr(), 0.25);

  // Momentum: the first step uses the gradient, later ones momentum * buffer + gradient.
  auto momentum = MakeOptimizer(Config("momentum", 0.5), 1);
  std::vector<float> q = {0.0f}, h = {1.0f};
  momentum->Step(q.data(), h.data());  // buffer 1
  EXPECT_EQ(q[0], -0.5f);
  momentum->Step(q.data(), h.data());  // buffer 0.9 * 1 + 1
  EXPECT_FLOAT_EQ(q[0], -0.5f - 0.5f * 1.9f);
}

TEST(ClipByGlobalNorm, ScalesEveryShardByTheGlobalNorm) {
  // torch::nn::utils::clip_grad_norm_'s rule: scale by max / (norm + 1e-6) when that is < 1.
  std::vector<float> a = {3.0f}, b = {4.0f, 12.0f};  // two shards of one gradient
  const double norm = std::sqrt(SquaredNorm(a.data(), a.size()) + SquaredNorm(b.data(), b.size()));
  EXPECT_EQ(norm, 13.0);
  ClipByGlobalNorm(a.data(), a.size(), norm, 6.5);
  ClipByGlobalNorm(b.data(), b.size(), norm, 6.5);
  const float half = static_cast<float>(6.5 / (13.0 + 1e-6));
  EXPECT_EQ(a, std::vector<float>({3.0f * half}));
  EXPECT_EQ(b, std::vector<float>({4.0f * half, 12.0f * half}));

  const std::vector<float> g = {3.0f, -4.0f};
  for (double max_norm : {0.0, -1.0, 5.1, 7.0}) {  // off, off, norm < max
    std::vector<float> c = g;
    ClipByGlobalNorm(c.data(), c.size(), 5.0, max_norm);
    EXPECT_EQ(c, g) << max_norm;
  }
  std::vector<float> c = g;
  ClipByGlobalNorm(c.data(), c.size(), std::nan(""), 1.0);
  EXPECT_EQ(c, g);
  ClipByGlobalNorm(c.data(), c.size(), 5.0, 1.0);
  EXPECT_FLOAT_EQ(c[0], 0.6f);
  EXPECT_FLOAT_EQ(c[1], -0.8f);

  // Against LibTorch itself, on a norm right at the bound (the 1e-6 makes it clip slightly).
  auto t = torch::tensor({3.0f, -4.0f});
  t.mutable_grad() = t.detach().clone();
  torch::nn::utils::clip_grad_norm_(std::vector<torch::Tensor>{t}, 5.0);
  std::vector<float> d = g;
  ClipByGlobalNorm(d.data(), d.size(), 5.0, 5.0);
  EXPECT_EQ(d[0], t.grad()[0].item<float>());
  EXPECT_EQ(d[1], t.grad()[1].item<float>());
}

TEST(SquaredNorm, SumsInDouble) {
  EXPECT_EQ(SquaredNorm(nullptr, 0), 0.0);
  std::vector<float> v(19);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  EXPECT_EQ(SquaredNorm(v.data(), v.size()), 19.0 * 20.0 * 39.0 / 6.0);  // 1^2 + ... + 19^2
  const std::vector<float> big = {1e20f, -1e20f};  // squares overflow float, not double
  const double x = 1e20f;
  EXPECT_DOUBLE_EQ(SquaredNorm(big.data(), big.size()), 2 * x * x);
}

TEST(FirstNonFinite, FindsNanAndInfinityAnywhere) {
  EXPECT_EQ(FirstNonFinite(nullptr, 0), 0u);
  std::vector<float> v(37, 1.5f);
  v[3] = -3.4e38f;  // large but finite
  EXPECT_EQ(FirstNonFinite(v.data(), v.size()), v.size());
  for (float bad : {std::nanf(""), -std::nanf(""), INFINITY, -INFINITY}) {
    for (size_t at : {size_t{0}, size_t{17}, v.size() - 1}) {
      std::vector<float> w = v;
      w[at] = bad;
      if (at + 1 < w.size()) w[at + 1] = bad;  // the first one is reported
      EXPECT_EQ(FirstNonFinite(w.data(), w.size()), at) << bad;
    }
  }
}

// Expects `c.Validate()` and MakeOptimizer(c) to throw std::invalid_argument mentioning `what`.
void ExpectRejected(const OptimizerConfig& c, const std::string& what) {
  for (int make = 0; make < 2; ++make) {
    try {
      if (make) {
        MakeOptimizer(c, 3);
      } else {
        c.Validate();
      }
      ADD_FAILURE() << "accepted " << Describe(c);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << "'" << e.what() << "' does not mention " << what;
    }
  }
}

TEST(OptimizerConfig, ValidateRejectsBadFields) {
  EXPECT_NO_THROW(OptimizerConfig().Validate());
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (double lr : {0.0, -1e-3, nan, inf}) ExpectRejected(Config("adam", lr), "lr");
  for (double v : {-0.1, 1.0, nan}) {
    OptimizerConfig c = Config("momentum", 1e-3);
    c.momentum = v;
    ExpectRejected(c, "momentum");
    c = Config("adam", 1e-3);
    c.beta1 = v;
    ExpectRejected(c, "beta1");
    c = Config("adam", 1e-3);
    c.beta2 = v;
    ExpectRejected(c, "beta2");
  }
  for (double eps : {-1e-8, inf, nan}) {
    OptimizerConfig c;
    c.eps = eps;
    ExpectRejected(c, "eps");
  }
}

TEST(OptimizerConfig, MakeOptimizerRejectsUnknownNames) {
  ExpectRejected(Config("adagrad", 1e-3), "'adagrad'");
  ExpectRejected(Config("Adam", 1e-3), "'Adam'");
  ExpectRejected(Config("", 1e-3), "''");
  for (const std::string name : {"sgd", "momentum", "adam"}) {
    auto o = MakeOptimizer(Config(name, 1e-3), 3);
    EXPECT_EQ(o->size(), 3u);
    EXPECT_EQ(o->steps(), 0);
    EXPECT_EQ(o->lr(), 1e-3);
  }
}

}  // namespace
}  // namespace server
}  // namespace tteps
