// tteps-ppo-pretrain: trains the accumulation policy offline on the simulated sync job
// (scheduler/ppo/sim_environment.h) and saves it for --ppo_policy_in. The same --ppo_* flags as
// the scheduler; the simulated cluster is described by --sim_* flags.
#include <ATen/Parallel.h>
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <vector>

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
              "seconds per micro-batch of each simulated worker (comma-separated); several jobs "
              "separated by ';' (e.g. '0.1,0.1;0.1,0.3'): the episodes take them in turn");
DEFINE_double(sim_comm_s, 0.15, "communication seconds per simulated step");
DEFINE_string(sim_noise_scale, "400",
              "the simulated job's gradient noise scale in trips (the batch at which a trip's "
              "value has halved); several, comma-separated: each job runs at every one");
DEFINE_double(sim_trips, 32, "trips per simulated micro-batch");
DEFINE_double(sim_step_jitter, 0.5,
              "the largest sigma of the log-normal factor on each simulated worker's step "
              "compute (each episode draws its own from [0, this]): a balanced split still "
              "waits for whichever step ran long, and the speeds read from one step vary; "
              "the observation sees it, the goodput does not");
DEFINE_string(sim_step_model, "adam",
              "how a step's progress grows with its batch: adam (Adam at a fixed learning rate, "
              "the jobs' default: sqrt(S / (S + S0))) or scaled (a rate scaled with the batch, "
              "--lr_scaling adascale or SGD: S / (S + S0))");
DEFINE_int32(report_every, 25, "episodes between greedy evaluations against the oracle");
DEFINE_int32(eval_episodes, 5, "episodes (seeds) per evaluation");

namespace tteps::ppo {
namespace {

double GreedyReturn(PpoAgent* agent, const SimConfig& config) {
  SimEnvironment env(config);
  return Runner(agent, {/*learn=*/false, /*greedy=*/true, 64}).RunEpisode(env);
}

// The simulated jobs of the --sim_* flags: one per ';'-separated list of speeds, at every noise
// scale; the episodes take them in turn.
std::vector<SimConfig> SimJobsFromFlags(const LivePolicyOptions& opts) {
  if (FLAGS_episodes < 1 || FLAGS_report_every < 1 || FLAGS_eval_episodes < 1) {
    throw std::invalid_argument("--episodes, --report_every and --eval_episodes must be >= 1");
  }
  if (!(FLAGS_sim_comm_s >= 0)) throw std::invalid_argument("--sim_comm_s must be >= 0");
  if (!(FLAGS_sim_trips > 0)) throw std::invalid_argument("--sim_trips must be > 0");
  if (!(FLAGS_sim_step_jitter >= 0)) {
    throw std::invalid_argument("--sim_step_jitter must be >= 0");
  }
  std::vector<double> noise_scales;
  try {
    noise_scales = SplitDoubles(FLAGS_sim_noise_scale);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--sim_noise_scale: ") + e.what());
  }
  if (noise_scales.empty()) throw std::invalid_argument("--sim_noise_scale names no value");
  for (double v : noise_scales) {
    if (!(v > 0)) throw std::invalid_argument("--sim_noise_scale: every scale must be > 0");
  }
  // One simulated job per ';'-separated list of speeds; episodes take them in turn.
  if (FLAGS_sim_step_model != "adam" && FLAGS_sim_step_model != "scaled") {
    throw std::invalid_argument("--sim_step_model must be adam or scaled, not '" +
                                FLAGS_sim_step_model + "'");
  }
  const StepModel step_model =
      FLAGS_sim_step_model == "adam" ? StepModel::kFixedAdamStep : StepModel::kScaledLr;
  std::vector<SimConfig> jobs;
  std::string specs = FLAGS_sim_compute_s;
  std::replace(specs.begin(), specs.end(), ';', '\n');
  std::istringstream lines(specs);
  for (std::string spec; std::getline(lines, spec);) {
    SimConfig sc;
    try {
      sc.compute_s = SplitDoubles(spec);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--sim_compute_s: ") + e.what());
    }
    for (double v : sc.compute_s) {
      if (!(v > 0)) throw std::invalid_argument("--sim_compute_s: every time must be > 0");
    }
    if (sc.compute_s.empty()) throw std::invalid_argument("--sim_compute_s: a job of no worker");
    sc.comm_s = FLAGS_sim_comm_s;
    sc.trips_per_microbatch = FLAGS_sim_trips;
    sc.step_jitter = FLAGS_sim_step_jitter;
    sc.alpha_min = opts.alpha_min;
    sc.alpha_max = opts.alpha_max;
    sc.job_scope = opts.job_scope;
    sc.step_model = step_model;
    for (double s0 : noise_scales) {
      sc.s0 = s0;
      sc.seed = opts.ppo.seed + jobs.size();
      jobs.push_back(sc);
    }
  }
  if (jobs.empty()) throw std::invalid_argument("--sim_compute_s names no worker");
  return jobs;
}

// One environment per simulated job, each named in the log with its best accumulations.
std::vector<SimEnvironment> Environments(const std::vector<SimConfig>& jobs) {
  std::vector<SimEnvironment> train_envs;
  for (const SimConfig& sc : jobs) {
    train_envs.emplace_back(sc);
    std::string best;
    for (auto a : train_envs.back().best_alphas()) {
      best += (best.empty() ? "" : ",") + std::to_string(a);
    }
    LOG(INFO) << "simulated job: " << sc.compute_s.size() << " workers, noise scale " << sc.s0
              << ", best alphas " << best;
  }
  return train_envs;
}

int Pretrain() {
  PolicyConfig policy = scheduler::PolicyConfigFromFlags();
  // Pre-training starts from scratch unless told otherwise (the shipped policy is its output).
  if (gflags::GetCommandLineFlagInfoOrDie("ppo_policy_in").is_default) policy.policy_in.clear();
  scheduler::CheckPpo(policy);
  const auto opts = scheduler::LivePolicyOptionsOf(policy);
  if (opts.policy_out.empty()) throw std::invalid_argument("--ppo_policy_out is required");
  const std::vector<SimConfig> jobs = SimJobsFromFlags(opts);

  PpoAgent agent(opts.ppo);
  if (!opts.policy_in.empty()) agent.Load(opts.policy_in);
  std::vector<SimEnvironment> train_envs = Environments(jobs);
  // Evaluation episodes use seeds the training never sees: one set to choose the policy to
  // keep, another to report it without that choice's optimism. Each covers every job.
  const auto returns = [&](PpoAgent* a, uint64_t offset, double* oracle) {
    double total = 0;
    for (const SimConfig& sc : jobs) {
      for (int i = 0; i < FLAGS_eval_episodes; ++i) {
        SimConfig e = sc;
        e.seed = sc.seed + offset + i;
        if (a) total += GreedyReturn(a, e);
        if (oracle) *oracle += OracleReturn(e);
      }
    }
    return total;
  };
  const double evals = static_cast<double>(FLAGS_eval_episodes * jobs.size());
  double oracle = 0;
  returns(nullptr, 1000, &oracle);
  Runner runner(&agent, {/*learn=*/true, /*greedy=*/false, opts.rollout});
  // PPO's return is not monotone in training: the best evaluated policy is the one kept.
  double best_return = -1e300;
  int best_episode = 0;
  for (int ep = 1; ep <= FLAGS_episodes; ++ep) {
    runner.RunEpisode(train_envs[(ep - 1) % train_envs.size()]);
    if (ep % FLAGS_report_every != 0 && ep != FLAGS_episodes) continue;
    const double learned = returns(&agent, 1000, nullptr);
    std::printf("episode %d: greedy return %.3f = %.1f%% of the oracle's %.3f (%d updates)\n", ep,
                learned / evals, 100 * learned / oracle, oracle / evals, runner.updates());
    std::fflush(stdout);
    if (learned > best_return) {
      best_return = learned;
      best_episode = ep;
      agent.Save(opts.policy_out);
    }
  }
  PpoAgent kept(opts.ppo);
  kept.Load(opts.policy_out);
  double test_oracle = 0;
  const double test = returns(&kept, 2000, &test_oracle);
  std::printf(
      "saved %s: the policy of episode %d; on %d fresh episodes %.1f%% of the oracle's return\n",
      opts.policy_out.c_str(), best_episode, static_cast<int>(evals), 100 * test / test_oracle);
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
