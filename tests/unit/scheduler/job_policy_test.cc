// The PPO agent's job scope: the merged window it decides on, the simulation in which the best
// global batch is known, and the live policy that splits the agent's batch by speed.
#include "scheduler/ppo/job_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <thread>

#include "scheduler/ppo/ppo.h"
#include "scheduler/ppo/runner.h"
#include "scheduler/ppo/sim_environment.h"

namespace tteps::ppo {
namespace {

// A window of `worker` at `alpha` over two steps: 16 trips and `per_micro` compute seconds per
// micro-batch, steps of `step_s`.
WindowReport Window(int worker, int64_t alpha, double per_micro, double step_s) {
  WindowReport r;
  r.worker = worker;
  r.step = 10;
  r.alpha = alpha;
  r.losses = {1.0, 0.8};
  r.trips = 2 * 16 * alpha;
  r.compute_s = per_micro * alpha;
  r.step_s = step_s;
  r.wait_s = step_s - r.compute_s;
  r.window_s = 2 * step_s;
  return r;
}

TEST(MergeWindows, TheJobsWindowWaitsForItsSlowestSlice) {
  WindowReport fast = Window(0, 4, 0.1, 1.3), slow = Window(1, 4, 0.3, 1.3);
  slow.losses = {0.6, 0.4, 0.2};  // one step more: the shorter window bounds the merge
  slow.step = 11;
  fast.noise_steps = 2;
  fast.noise = {1.0, 10.0};
  slow.noise_steps = 6;
  slow.noise = {3.0, 30.0};
  const WindowReport m = MergeWindows({fast, slow}, 4);
  EXPECT_EQ(m.worker, 0);
  EXPECT_EQ(m.alpha, 4);
  EXPECT_EQ(m.step, 11);
  ASSERT_EQ(m.losses.size(), 2u);
  EXPECT_DOUBLE_EQ(m.losses[0], (1.0 + 0.6) / 2);
  EXPECT_DOUBLE_EQ(m.losses[1], (0.8 + 0.4) / 2);
  EXPECT_EQ(m.trips, 2 * 2 * 16 * 4);
  EXPECT_DOUBLE_EQ(m.compute_s, 1.2);  // the slow slice's
  EXPECT_DOUBLE_EQ(m.step_s, 1.3);
  EXPECT_DOUBLE_EQ(m.wait_s, (0.9 + 0.1) / 2);
  EXPECT_EQ(m.noise_steps, 8);
  EXPECT_DOUBLE_EQ(m.noise.grad_sq, (2 * 1.0 + 6 * 3.0) / 8);
  EXPECT_DOUBLE_EQ(m.noise.trace, (2 * 10.0 + 6 * 30.0) / 8);
}

// In job scope the simulated optimum is a speed split: the slow worker gets less, and the
// global batch is W times a value of the grid.
TEST(JobScopeSimulation, TheBestGlobalBatchIsSplitBySpeed) {
  SimConfig sc;  // 0.05 and 0.15 s per micro-batch, 0.15 s of exchange, noise scale 400
  sc.job_scope = true;
  SimEnvironment env(sc);
  const auto& best = env.best_alphas();
  ASSERT_EQ(best.size(), 2u);
  EXPECT_GT(best[0], best[1]);
  const int64_t total = best[0] + best[1];
  EXPECT_TRUE(total == 2 || total == 4 || total == 8 || total == 16 || total == 32) << total;
  // One observation per window, always the job's (worker 0); episodes of 16 decisions.
  AgentObservation o = env.Reset();
  int decisions = 0;
  for (bool done = false; !done; ++decisions) {
    EXPECT_EQ(o.worker, 0);
    const EnvStep s = env.Step(env.OracleAction());
    o = s.next;
    done = s.done;
  }
  EXPECT_EQ(decisions, sc.decisions_per_worker);
}

// The job's observation tells how much the workers' speeds differ (feature 6) and how balanced
// the split is (10), from their compute: the even split of a 3x slower worker waits, 3 and 1
// does not, unless a step's compute jitters.
TEST(JobScopeSimulation, TheObservationTellsHowTheSlicesDifferAndTheSplitsBalance) {
  SimConfig sc;  // 0.05 and 0.15 s per micro-batch
  sc.job_scope = true;
  sc.random_start = false;  // at alpha_min: 1 and 1
  SimEnvironment env(sc);
  const AgentObservation even = env.Reset();
  EXPECT_NEAR(even.features[6], std::log2(1.5), 1e-5);
  EXPECT_NEAR(even.features[10], std::log2(2.0 / 3) / 4, 1e-5);
  EXPECT_NEAR(even.features[7], 0.05 / 0.3, 1e-5);  // 0.1 s of the fast one's 0.3 s step
  const AgentObservation split = env.Step(2).next;  // mean 2: 3 and 1
  EXPECT_NEAR(split.features[6], std::log2(1.5), 1e-5);
  EXPECT_FLOAT_EQ(split.features[10], 0.0f);
  EXPECT_NEAR(split.features[7], 0.0f, 1e-6);

  sc.step_jitter = 0.5;
  SimEnvironment jittery(sc);
  jittery.Reset();
  const AgentObservation balanced = jittery.Step(2).next;
  EXPECT_GT(balanced.features[7], 0.0f) << "a balanced split waits for the step that ran long";
  EXPECT_LT(balanced.features[10], 0.0f) << "the last step's speeds jitter";
}

double Evaluate(PpoAgent* agent, const SimConfig& sc) {
  if (!agent) return OracleReturn(sc);
  SimEnvironment env(sc);
  return Runner(agent, {false, true, 64}).RunEpisode(env);
}

// The agent learns the best global batch of simulated jobs whose noise scale differs: the
// observation's batch-over-noise feature is what tells them apart.
TEST(JobScopeSimulation, TheAgentLearnsTheBestGlobalBatch) {
  std::vector<SimConfig> jobs;
  for (double s0 : {32.0, 1024.0}) {
    SimConfig sc;
    sc.job_scope = true;
    sc.compute_s = {0.02, 0.06};
    sc.comm_s = 0.02;
    sc.trips_per_microbatch = 16;
    sc.s0 = s0;
    sc.seed = static_cast<uint64_t>(s0);
    jobs.push_back(sc);
  }
  ASSERT_NE(SimEnvironment(jobs[0]).best_alphas(), SimEnvironment(jobs[1]).best_alphas());
  PpoConfig c;
  c.seed = 1;
  c.lr = 1e-3;
  PpoAgent agent(c);
  Runner runner(&agent, {true, false, 64});
  std::vector<SimEnvironment> envs(jobs.begin(), jobs.end());
  const auto score = [&](PpoAgent* a) {
    double total = 0;
    for (SimConfig e : jobs) {
      for (int s = 0; s < 3; ++s) {
        e.seed += 100 + s;
        total += Evaluate(a, e);
      }
    }
    return total;
  };
  const double oracle = score(nullptr);
  double learned = 0;
  int episodes = 0;
  for (; episodes < 1500; ++episodes) {
    runner.RunEpisode(envs[episodes % envs.size()]);
    if (episodes % 50 != 49) continue;
    learned = score(&agent);
    if (learned >= 0.95 * oracle) break;
  }
  std::printf("job scope: after %d episodes (%d updates) %.1f%% of the oracle's return\n",
              episodes + 1, runner.updates(), 100 * learned / oracle);
  EXPECT_GE(learned, 0.95 * oracle);
}

// The live policy: once both slices reported a window at their accumulation, the agent's batch
// is split by speed. Worker 1 three times slower gets a quarter of it, whatever the agent chose.
TEST(JobPolicy, SplitsTheAgentsGlobalBatchBySpeed) {
  LivePolicyOptions o;
  o.learn = false;
  o.alpha_min = 1;
  o.alpha_max = 16;
  auto policy = MakeJobPolicy(o, 2, 4);
  policy->Observe(Window(0, 4, 0.1, 1.3));
  std::optional<scheduler::AlphaDecision> none = policy->Poll();
  EXPECT_FALSE(none) << "decided before the round was complete";
  policy->Observe(Window(1, 4, 0.3, 1.3));
  std::map<int, int64_t> alpha = {{0, 4}, {1, 4}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int decisions = 0;
  std::string action;
  std::vector<float> seen;
  while (decisions == 0 && std::chrono::steady_clock::now() < deadline) {
    while (auto d = policy->Poll()) {
      alpha[d->worker] = d->new_alpha;
      action = d->action;
      seen = d->observation;
      ++decisions;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(policy->Finish(), "");
  // Any batch the agent chose (2 x 2, 4 or 8) splits unevenly: the step shortens, so a split
  // is sent even where the agent kept the batch.
  ASSERT_GT(decisions, 0);
  EXPECT_LT(alpha[1], alpha[0]);
  const int64_t total = alpha[0] + alpha[1];
  EXPECT_TRUE(total == 4 || total == 8 || total == 16) << total;
  EXPECT_EQ(alpha[0], 3 * alpha[1]) << action;
  EXPECT_NE(action.find("/split"), std::string::npos) << action;
  // The agent saw how the slices differ (the slowest 1.5 x the mean) and that the even split
  // it decided from was not balanced (the mean slice computes 2/3 of the slowest one's step).
  ASSERT_EQ(seen.size(), static_cast<size_t>(kObservationSize));
  EXPECT_NEAR(seen[6], std::log2(1.5), 1e-5);
  EXPECT_NEAR(seen[10], std::log2(2.0 / 3) / 4, 1e-5);
  // The starting accumulation must be alpha_min times a power of two.
  EXPECT_THROW(MakeJobPolicy(o, 2, 3), std::invalid_argument);
  EXPECT_THROW(MakeJobPolicy(o, 2, 32), std::invalid_argument);
}

}  // namespace
}  // namespace tteps::ppo
