// tteps-ppo-pretrain: trains the accumulation policy offline on the simulated sync job
// (scheduler/ppo/sim_environment.h) and saves it for --ppo_policy_in. The same --ppo_* flags as
// the scheduler; the simulated cluster is described by --sim_* flags.
#include <ATen/Parallel.h>
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>
#include <stdexcept>

#include "common/init.h"
#include "common/split_list.h"
#include "scheduler/make_policy.h"
#include "scheduler/policy_flags.h"
#include "scheduler/ppo/ppo.h"
#include "scheduler/ppo/runner.h"
#include "scheduler/ppo/sim_environment.h"

DEFINE_int32(episodes, 300, "simulated episodes to train on");
DEFINE_int32(threads, 1, "LibTorch intra-op threads");
DEFINE_string(sim_compute_s, "0.05,0.15",
              "seconds per micro-batch of each simulated worker (comma-separated)");
DEFINE_double(sim_comm_s, 0.15, "communication seconds per simulated step");
DEFINE_int32(report_every, 25, "episodes between greedy evaluations against the oracle");
DEFINE_int32(eval_episodes, 5, "episodes (seeds) per evaluation");

namespace tteps::ppo {
namespace {

double GreedyReturn(PpoAgent* agent, const SimConfig& config) {
  SimEnvironment env(config);
  return Runner(agent, {/*learn=*/false, /*greedy=*/true, 64}).RunEpisode(env);
}

int Pretrain() {
  const PolicyConfig policy = scheduler::PolicyConfigFromFlags();
  scheduler::CheckPpo(policy);
  const auto opts = scheduler::LivePolicyOptionsOf(policy);
  if (opts.policy_out.empty()) throw std::invalid_argument("--ppo_policy_out is required");
  if (FLAGS_episodes < 1 || FLAGS_report_every < 1 || FLAGS_eval_episodes < 1) {
    throw std::invalid_argument("--episodes, --report_every and --eval_episodes must be >= 1");
  }
  SimConfig sc;
  try {
    sc.compute_s = SplitDoubles(FLAGS_sim_compute_s);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--sim_compute_s: ") + e.what());
  }
  for (double v : sc.compute_s) {
    if (!(v > 0)) throw std::invalid_argument("--sim_compute_s: every time must be > 0");
  }
  if (sc.compute_s.empty()) throw std::invalid_argument("--sim_compute_s names no worker");
  if (!(FLAGS_sim_comm_s >= 0)) throw std::invalid_argument("--sim_comm_s must be >= 0");
  sc.comm_s = FLAGS_sim_comm_s;
  sc.alpha_min = opts.alpha_min;
  sc.alpha_max = opts.alpha_max;
  sc.seed = opts.ppo.seed;

  PpoAgent agent(opts.ppo);
  if (!opts.policy_in.empty()) agent.Load(opts.policy_in);
  SimEnvironment train_env(sc);
  std::string best;
  for (auto a : train_env.best_alphas()) best += (best.empty() ? "" : ",") + std::to_string(a);
  LOG(INFO) << "simulated job: " << sc.compute_s.size() << " workers, best alphas " << best;
  // Evaluation episodes use seeds the training never sees: one set to choose the policy to
  // keep, another to report it without that choice's optimism.
  auto eval_config = [&](int i) {
    SimConfig e = sc;
    e.seed = sc.seed + 1000 + i;
    return e;
  };
  auto test_config = [&](int i) {
    SimConfig e = sc;
    e.seed = sc.seed + 2000 + i;
    return e;
  };
  double oracle = 0;
  for (int i = 0; i < FLAGS_eval_episodes; ++i) oracle += OracleReturn(eval_config(i));
  Runner runner(&agent, {/*learn=*/true, /*greedy=*/false, opts.rollout});
  // PPO's return is not monotone in training: the best evaluated policy is the one kept.
  double best_return = -1e300;
  int best_episode = 0;
  for (int ep = 1; ep <= FLAGS_episodes; ++ep) {
    runner.RunEpisode(train_env);
    if (ep % FLAGS_report_every != 0 && ep != FLAGS_episodes) continue;
    double learned = 0;
    for (int i = 0; i < FLAGS_eval_episodes; ++i) learned += GreedyReturn(&agent, eval_config(i));
    std::printf("episode %d: greedy return %.3f = %.1f%% of the oracle's %.3f (%d updates)\n", ep,
                learned / FLAGS_eval_episodes, 100 * learned / oracle, oracle / FLAGS_eval_episodes,
                runner.updates());
    std::fflush(stdout);
    if (learned > best_return) {
      best_return = learned;
      best_episode = ep;
      agent.Save(opts.policy_out);
    }
  }
  PpoAgent kept(opts.ppo);
  kept.Load(opts.policy_out);
  double test = 0, test_oracle = 0;
  for (int i = 0; i < FLAGS_eval_episodes; ++i) {
    test += GreedyReturn(&kept, test_config(i));
    test_oracle += OracleReturn(test_config(i));
  }
  std::printf(
      "saved %s: the policy of episode %d; on %d fresh episodes %.1f%% of the oracle's return\n",
      opts.policy_out.c_str(), best_episode, FLAGS_eval_episodes, 100 * test / test_oracle);
  return 0;
}

}  // namespace
}  // namespace tteps::ppo

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-ppo-pretrain --ppo_policy_out FILE [--episodes N] [--sim_* ...] "
                     "[--ppo_* ...]");
  at::set_num_threads(FLAGS_threads);
  try {
    return tteps::ppo::Pretrain();
  } catch (const std::exception& e) {
    LOG(ERROR) << e.what();
    return 2;
  }
}
