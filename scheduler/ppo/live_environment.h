// The live training job as an environment. The coordination loop pushes each worker's window
// report (the result queue); the agent's Step puts its decision in the policy queue, which the
// loop drains and sends to the worker, then waits for the next report. The loop never waits
// for the agent.
//
// Reward: training progress per wall second. Every report updates a smoothed job-wide
// training loss, an exponential average of the windows' mean losses in which a window weighs
// in proportion to its trip count (weight 0.3 x trips / mean trips, at most 1). A worker's
// decision is rewarded, when that worker reports again, with the fall of the smoothed loss
// between its two reports divided by the seconds between them, scaled by the running RMS of
// such rewards (so the agent sees a unitless quantity around +-1). Per wall second, not per
// step: a larger alpha makes steps longer, and only progress per second is worth having.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "scheduler/accumulation_policy.h"
#include "scheduler/ppo/environment.h"
#include "scheduler/ppo/observation.h"

namespace tteps::ppo {

class LiveEnvironment : public Environment {
 public:
  LiveEnvironment(int64_t alpha_min, int64_t alpha_max);

  // Coordination loop side (thread-safe, non-blocking).
  void Push(const WindowReport& report);
  std::optional<scheduler::AlphaDecision> PollDecision();
  void Finish();  // the job's training is over: the episode ends

  // Agent side (blocks until a report arrives or the job ends).
  AgentObservation Reset() override;
  EnvStep Step(int action) override;
  std::string Render() const override;

 private:
  struct Report {
    WindowReport window;
    double reward = 0;
    bool has_reward = false;
  };
  // Waits for the next report; false when the job ended first.
  bool Next(std::unique_lock<std::mutex>& lock, Report* out);
  AgentObservation Observe(const Report& r);
  double Reward(const WindowReport& r, bool* has_reward);

  const int64_t alpha_min_, alpha_max_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Report> reports_;
  std::deque<scheduler::AlphaDecision> decisions_;
  bool finished_ = false;

  // Agent side state.
  ObservationBuilder builder_;
  std::map<int, double> compute_per_microbatch_;  // latest, per worker
  Report current_;
  AgentObservation current_obs_;

  // Reward state (updated on Push).
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_ = Clock::now();
  double smoothed_loss_ = 0;
  bool have_loss_ = false;
  RunningStat trips_;
  double reward_square_sum_ = 0;
  int64_t rewards_ = 0;
  std::map<int, std::pair<double, double>> last_;  // worker -> (smoothed loss, time)
};

}  // namespace tteps::ppo
