// A simulated sync-SGD job in which the best alpha of every worker is known, for tests and for
// pre-training a policy offline. Per step, worker i computes alpha_i micro-batches of b trips
// at c_i seconds each; the step ends when the slowest has finished, plus a communication cost
// C: T = max_i(alpha_i c_i) + C. A step of S = b sum(alpha_i) trips shrinks the excess loss
// (L - L_inf) by the factor exp(-k g(S)), g(S) = S / (S + S0) (a learning rate scaled with the
// batch) or sqrt(S / (S + S0)) (Adam at a fixed rate; StepModel): larger batches cost
// proportionally more but help less per trip. Goodput is therefore g(S) / T, and the reward
// of a window is its goodput relative to that of all workers at alpha_min. The observed
// per-step losses carry Gaussian noise, and each worker's step compute a log-normal jitter
// whose sigma each episode draws from [0, step_jitter]: what is observed (the waiting, and in
// job scope the speeds read from the window's last step, as scheduler/speed_meter.h reads
// them) sees it, the goodput does not. In a live sync job a balanced split still waits, for
// whichever worker's step ran long.
//
// With job_scope the agent decides for the job as a whole (scheduler/ppo/job_policy.h): one
// observation per window, the job's merged window, whose alpha is the workers' mean; the
// action halves, keeps or doubles that mean, and the global batch (mean x W) is split over the
// workers by their speed, as the live job splits it.
#pragma once

#include <random>
#include <vector>

#include "common/gradient_noise.h"
#include "scheduler/ppo/environment.h"
#include "scheduler/ppo/observation.h"

namespace tteps::ppo {

struct SimConfig {
  std::vector<double> compute_s = {0.05, 0.15};  // seconds per micro-batch, per worker
  double comm_s = 0.15;                          // per step
  double trips_per_microbatch = 32;
  double s0 = 400;  // batch size at which a trip's value has halved
  double k = 0.05;  // loss decay per step at g(S) = 1
  int steps_per_window = 10;
  int decisions_per_worker = 16;  // episode length
  int64_t alpha_min = 1, alpha_max = 16;
  double loss_noise = 0.02;
  double step_jitter = 0;    // the largest sigma of the log-normal factor on a step's compute
  bool random_start = true;  // start each episode at random alphas (else alpha_min)
  bool job_scope = false;    // one decision per window for the global batch
  // How a step's progress grows with its batch (common/gradient_noise.h), s0 as B_noise.
  StepModel step_model = StepModel::kScaledLr;
  uint64_t seed = 1;
};

class SimEnvironment : public Environment {
 public:
  explicit SimEnvironment(SimConfig config);
  AgentObservation Reset() override;
  EnvStep Step(int action) override;
  std::string Render() const override;

  // The known optimum: the alphas of the grid {alpha_min * 2^j} with the highest goodput (job
  // scope: the speed splits of W times the grid).
  const std::vector<int64_t>& best_alphas() const { return best_; }
  // What a policy that knows the optimum does now: one doubling or halving toward it.
  int OracleAction() const;
  double Goodput(const std::vector<int64_t>& alphas) const;

 private:
  AgentObservation Observe(int worker);
  // One window of steps_per_window training steps at the current alphas.
  void SimulateWindow();
  // Job scope: every worker's alpha from the mean, split by the workers' speeds.
  std::vector<int64_t> SplitOf(int64_t mean_alpha) const;
  std::vector<int64_t> Grid() const;

  SimConfig c_;
  std::mt19937_64 rng_;
  std::vector<int64_t> best_, alphas_;
  int64_t mean_alpha_ = 1, best_mean_ = 1;  // job scope
  double reference_goodput_ = 1;
  double excess_loss_ = 1;
  std::vector<std::vector<double>> last_losses_;  // per worker, the last window's
  std::vector<double> last_wait_s_;               // per worker, the last window's per step
  std::vector<double> last_seconds_;              // per worker, per micro-batch in its last step
  double last_step_s_ = 0;                        // the last window's mean step
  double jitter_ = 0;                             // this episode's sigma
  int turn_ = 0, decisions_ = 0;
  ObservationBuilder builder_;
};

// The return of one episode in which every decision is the oracle's.
double OracleReturn(const SimConfig& config);

}  // namespace tteps::ppo
