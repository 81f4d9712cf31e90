// PPO2 pieces (GAE, the clipped surrogate, policy save / load, determinism) and learning on
// the simulated job, where the best alpha of every worker is known.
#include "scheduler/ppo/ppo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "scheduler/ppo/gae.h"
#include "scheduler/ppo/live_environment.h"
#include "scheduler/ppo/observation.h"
#include "scheduler/ppo/ppo_loss.h"
#include "scheduler/ppo/runner.h"
#include "scheduler/ppo/sim_environment.h"

namespace tteps::ppo {
namespace {

TEST(Gae, MatchesAHandComputedExample) {
  // gamma 0.5, lambda 0.5; rewards 1, 2, 3; values 0.5, 1, 1.5; bootstrap value 2; no end.
  // delta_2 = 3 + 0.5*2 - 1.5 = 2.5          A_2 = 2.5
  // delta_1 = 2 + 0.5*1.5 - 1 = 1.75         A_1 = 1.75 + 0.25*2.5 = 2.375
  // delta_0 = 1 + 0.5*1 - 0.5 = 1            A_0 = 1 + 0.25*2.375 = 1.59375
  const auto g = ComputeGae({1, 2, 3}, {0.5, 1, 1.5}, {false, false, false}, 2.0, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(g.advantages[2], 2.5);
  EXPECT_DOUBLE_EQ(g.advantages[1], 2.375);
  EXPECT_DOUBLE_EQ(g.advantages[0], 1.59375);
  EXPECT_DOUBLE_EQ(g.returns[0], 1.59375 + 0.5);
  // An episode end after step 1 cuts both the bootstrap and the advantage chain there.
  const auto cut = ComputeGae({1, 2, 3}, {0.5, 1, 1.5}, {false, true, false}, 2.0, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(cut.advantages[1], 2 - 1.0);
  EXPECT_DOUBLE_EQ(cut.advantages[0], 1 + 0.5 * 1 - 0.5 + 0.25 * 1.0);
  EXPECT_THROW(ComputeGae({1}, {1, 2}, {false}, 0, 0.9, 0.9), std::invalid_argument);
}

TEST(ClippedSurrogate, ClipsTheRatioOnTheSideTheAdvantagePointsTo) {
  const auto old = torch::zeros({4});
  // Ratios 1.5, 0.5, 1.5, 0.5 with advantages +1, +1, -1, -1.
  const auto log_prob = torch::log(torch::tensor({1.5, 0.5, 1.5, 0.5}));
  const auto adv = torch::tensor({1.0, 1.0, -1.0, -1.0});
  const double eps = 0.2;
  // min(r A, clip(r) A): +1: min(1.5, 1.2) = 1.2; min(0.5, 0.8) = 0.5;
  //                      -1: min(-1.5, -1.2) = -1.5; min(-0.5, -0.8) = -0.8.
  const double expected = -(1.2 + 0.5 - 1.5 - 0.8) / 4;
  EXPECT_NEAR(ClippedSurrogateLoss(log_prob, old, adv, eps).item<double>(), expected, 1e-6);
  // Inside the clip range the objective is the plain ratio times the advantage.
  const auto near = torch::log(torch::tensor({1.1, 0.9}));
  EXPECT_NEAR(
      ClippedSurrogateLoss(near, torch::zeros({2}), torch::tensor({1.0, 1.0}), eps).item<double>(),
      -1.0, 1e-6);
}

TEST(Observation, LossStatsAndActions) {
  const auto s = SummariseLosses({3, 1, 4, 1, 5});
  EXPECT_EQ(s.initial, 3);
  EXPECT_EQ(s.minimum, 1);
  EXPECT_EQ(s.maximum, 5);
  EXPECT_EQ(s.last, 5);
  EXPECT_EQ(s.max_change, 4);
  EXPECT_EQ(ApplyAction(4, 0, 1, 16), 2);
  EXPECT_EQ(ApplyAction(4, 1, 1, 16), 4);
  EXPECT_EQ(ApplyAction(16, 2, 1, 16), 16);
  EXPECT_EQ(ApplyAction(1, 0, 1, 16), 1);
  ObservationBuilder b(1, 16);
  WindowReport r;
  r.alpha = 4;
  r.losses = {1, 0.9};
  r.step_s = 1;
  r.wait_s = 0.25;
  r.staleness = 1;
  JobView view;
  view.relative_compute = 2.0;
  view.relative_step = 0.25;
  view.batch_over_noise = 4.0;
  const auto obs = b.Build(r, view);
  ASSERT_EQ(obs.size(), static_cast<size_t>(kObservationSize));
  EXPECT_FLOAT_EQ(obs[5], 0.5f);   // log2(4) / log2(16)
  EXPECT_FLOAT_EQ(obs[6], 1.0f);   // twice as slow as the mean
  EXPECT_FLOAT_EQ(obs[7], 0.25f);  // a quarter of the step waiting
  EXPECT_FLOAT_EQ(obs[8], 0.5f);
  EXPECT_FLOAT_EQ(obs[9], 0.5f);    // log2(4) / 4: the batch four times the noise scale
  EXPECT_FLOAT_EQ(obs[10], -0.5f);  // a quarter of the slowest worker's step: log2(1/4) / 4
  EXPECT_FLOAT_EQ(b.Build(r, JobView{})[9], 0.0f);  // the noise not known yet
}

// The job scope's view of a split: the slowest slice over the mean, and the mean slice's step
// over the slowest one's.
TEST(Observation, SplitViewMeasuresHowTheSlicesDifferAndTheBalance) {
  const JobView even = SplitView({0.1, 0.3}, {1, 1});
  EXPECT_DOUBLE_EQ(even.relative_compute, 1.5);
  EXPECT_DOUBLE_EQ(even.relative_step, (0.1 + 0.3) / 2 / 0.3);
  const JobView balanced = SplitView({0.1, 0.3}, {3, 1});
  EXPECT_DOUBLE_EQ(balanced.relative_compute, 1.5);
  EXPECT_NEAR(balanced.relative_step, 1.0, 1e-12);
  const JobView equal = SplitView({0.2, 0.2}, {4, 4});
  EXPECT_DOUBLE_EQ(equal.relative_compute, 1.0);
  EXPECT_DOUBLE_EQ(equal.relative_step, 1.0);
}

// A window of `worker` at `alpha`: 16 trips and `per_micro` compute seconds per micro-batch,
// steps of `step_s` (the slowest worker's compute plus 0.02 s of exchange).
WindowReport Window(int worker, int64_t alpha, double per_micro, double step_s) {
  WindowReport r;
  r.worker = worker;
  r.alpha = alpha;
  r.losses = {1.0, 1.0};
  r.trips = 2 * 16 * alpha;
  r.compute_s = per_micro * alpha;
  r.step_s = step_s;
  return r;
}

// Worker 0 computes a micro-batch in 0.1 s, worker 1 in 0.2 s: at alpha 1 worker 0 waits,
// and doubling its alpha adds half the trips to a step of the same length. The reward is
// goodput over alpha_min's: 1 there, 1.5 for the doubled alpha while the noise is unknown, and
// (16 + 32) / (16 + 48) of that once the workers measure a noise scale of 16 trips (two
// windows that agree: the standard error of their mean resolves it).
TEST(LiveEnvironment, RewardsGoodputRelativeToEveryWorkerAtAlphaMin) {
  for (const bool noisy : {false, true}) {
    LiveEnvironment env(1, 16, StepModel::kScaledLr);
    env.Push(Window(0, 1, 0.1, 0.22));
    WindowReport first = Window(1, 1, 0.2, 0.22);
    first.noise_steps = noisy ? 5 : 0;
    first.noise = {/*grad_sq=*/1.0, /*trace=*/16.0};
    env.Push(first);
    env.Push(first);  // again
    env.Push(Window(0, 2, 0.1, 0.22));
    env.Finish();                          // the queued reports still reach the agent
    env.Reset();                           // worker 0's first window: nothing to reward
    EXPECT_FALSE(env.Step(1).has_reward);  // worker 1's first window
    const EnvStep at_min = env.Step(1);    // worker 1 again: both at alpha 1
    ASSERT_TRUE(at_min.has_reward);
    EXPECT_NEAR(at_min.reward, 1.0, 1e-9);
    const EnvStep doubled = env.Step(2);
    ASSERT_TRUE(doubled.has_reward);
    EXPECT_NEAR(doubled.reward, noisy ? 1.5 * 48.0 / 64.0 : 1.5, 1e-9) << "noisy " << noisy;
    EXPECT_TRUE(env.Step(1).done);
  }
}

TEST(PpoAgent, SaveAndLoadGiveTheSameDecisions) {
  PpoConfig c;
  c.seed = 7;
  PpoAgent a(c);
  // Train a little so that the weights are not the initial ones.
  SimConfig sc;
  SimEnvironment env(sc);
  Runner(&a, {true, false, 16}).RunEpisode(env);
  const std::string path = ::testing::TempDir() + "/tteps_policy.pt";
  a.Save(path);
  c.seed = 99;  // other initial weights
  PpoAgent b(c);
  b.Load(path);
  const std::vector<float> obs = {0.1f,  -0.2f, 0.3f, 0.0f, 1.0f, 0.25f,
                                  -1.0f, 0.5f,  0.0f, 0.3f, -0.5f};
  const auto da = a.Act(obs, true), db = b.Act(obs, true);
  EXPECT_EQ(da.action, db.action);
  EXPECT_DOUBLE_EQ(da.log_prob, db.log_prob);
  EXPECT_DOUBLE_EQ(a.Value(obs), b.Value(obs));
  // Another shape is refused with a message.
  PpoConfig other;
  other.hidden = 8;
  PpoAgent small(other);
  EXPECT_THROW(small.Load(path), std::runtime_error);
  EXPECT_THROW(small.Load(path + ".missing"), std::runtime_error);
  std::filesystem::remove(path);
}

// The return of one greedy episode of `agent`, or of the oracle when agent is null.
double Evaluate(PpoAgent* agent, const SimConfig& sc) {
  if (!agent) return OracleReturn(sc);
  SimEnvironment env(sc);
  return Runner(agent, {false, true, 64}).RunEpisode(env);
}

TEST(PpoOnSimulation, LearnsTheKnownBestAlphaForAFastAndASlowWorker) {
  SimConfig sc;  // worker 0: 0.05 s per micro-batch, worker 1: 0.15 s; comm 0.15 s
  sc.seed = 3;
  {
    SimEnvironment probe(sc);
    ASSERT_EQ(probe.best_alphas(), (std::vector<int64_t>{4, 1}));  // the slow worker gets less
  }
  PpoConfig c;
  c.seed = 1;
  c.lr = 1e-3;
  PpoAgent agent(c);
  SimEnvironment train_env(sc);
  Runner runner(&agent, {true, false, 64});
  SimConfig eval = sc;
  eval.seed = 11;
  eval.loss_noise = 0.02;
  double oracle = 0, learned = 0, untrained = 0;
  for (int s = 0; s < 5; ++s) {
    eval.seed = 11 + s;
    oracle += Evaluate(nullptr, eval);
  }
  {
    PpoAgent fresh(c);
    for (int s = 0; s < 5; ++s) {
      eval.seed = 11 + s;
      untrained += Evaluate(&fresh, eval);
    }
  }
  int episodes = 0;
  for (; episodes < 400; ++episodes) {
    runner.RunEpisode(train_env);
    if (episodes % 25 != 24) continue;
    learned = 0;
    for (int s = 0; s < 5; ++s) {
      eval.seed = 11 + s;
      learned += Evaluate(&agent, eval);
    }
    if (learned >= 0.9 * oracle) break;
  }
  std::printf("after %d episodes (%d updates): return %.2f, oracle %.2f, untrained %.2f\n",
              episodes + 1, runner.updates(), learned / 5, oracle / 5, untrained / 5);
  EXPECT_GE(learned, 0.9 * oracle);
  EXPECT_LT(untrained, 0.9 * oracle);  // the task is not trivial
}

}  // namespace
}  // namespace tteps::ppo
