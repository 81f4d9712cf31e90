// The live training job as an environment. The coordination loop pushes each worker's window
// report (the result queue); the agent's Step puts its decision in the policy queue, which the
// loop drains and sends to the worker, then waits for the next report. The loop never waits
// for the agent.
//
// Reward: goodput, as Pollux (OSDI 2021) defines it and the simulation (sim_environment.h)
// rewards it. A worker's decision is rewarded, when that worker reports again, with the job's
// throughput (the sum over workers of trips per step over seconds per step, each worker's
// latest window) times the statistical efficiency (B_noise + M0) / (B_noise + M) of the global
// batch M (M0: every worker at alpha_min; B_noise: the gradient noise scale the workers
// measure, averaged over windows; efficiency 1 while it is unknown), over the throughput the
// same workers would have at alpha_min (their measured compute per micro-batch, the exchange's
// measured time): 1 at alpha_min, as in the simulation, so that a policy pre-trained there
// meets rewards of the scale it learned. Progress per second, not per step, and not the raw
// change of a noisy training loss: a larger batch takes longer and helps less per trip.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "common/gradient_noise.h"
#include "scheduler/accumulation_policy.h"
#include "scheduler/ppo/environment.h"
#include "scheduler/ppo/observation.h"

namespace tteps::ppo {

class LiveEnvironment : public Environment {
 public:
  // `step_model`: how the goodput it rewards counts a batch's trips (common/gradient_noise.h).
  LiveEnvironment(int64_t alpha_min, int64_t alpha_max, StepModel step_model);

  // Coordination loop side (thread-safe, non-blocking). `split`: the job scope's view of its
  // split (SplitView), which one merged window cannot tell; else from the workers' windows.
  void Push(const WindowReport& report, const std::optional<JobView>& split = std::nullopt);
  std::optional<scheduler::AlphaDecision> PollDecision();
  void Finish();  // the job's training is over: the episode ends

  // Agent side (blocks until a report arrives or the job ends).
  AgentObservation Reset() override;
  EnvStep Step(int action) override;
  std::string Render() const override;

 private:
  struct Report {
    WindowReport window;
    JobView view;  // the job as it stood when the window arrived
    double reward = 0;
    bool has_reward = false;
  };
  // A worker's latest window, as the job view and the goodput need it.
  struct WorkerState {
    int64_t alpha = 1;
    double compute_per_micro = 0, trips_per_step = 0, step_s = 0;
  };
  // Waits for the next report; false when the job ended first.
  bool Next(std::unique_lock<std::mutex>& lock, Report* out);
  AgentObservation Observe(const Report& r);
  // Updates the job's state with `r`; its view and reward (mu_ held).
  void Account(Report* r, const std::optional<JobView>& split);

  const int64_t alpha_min_, alpha_max_;
  const StepModel step_model_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Report> reports_;
  std::deque<scheduler::AlphaDecision> decisions_;
  bool finished_ = false;

  // Agent side state.
  ObservationBuilder builder_;
  Report current_;
  AgentObservation current_obs_;

  // The job as the reports tell it (updated on Push).
  std::map<int, WorkerState> workers_;
  NoiseSum noise_;  // decaying average over the windows
  double last_goodput_ = 0;
};

}  // namespace tteps::ppo
