// Drives an agent through an environment: decides for each observation, credits each reward
// to the decision it belongs to (per worker), and runs a PPO2 update every `rollout`
// transitions. The same loop serves the simulation (tests, pre-training) and the live job.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "scheduler/ppo/environment.h"
#include "scheduler/ppo/ppo.h"

namespace tteps::ppo {

struct RunnerOptions {
  bool learn = true;    // collect transitions and update
  bool greedy = false;  // act on the most likely action instead of sampling
  int rollout = 64;     // transitions per update
};

// Called after every decision: the observation it was made on, the action, and the reward
// credited to this worker's previous decision (if any).
using DecisionCallback = std::function<void(const AgentObservation& obs, const Decision& d,
                                            double reward, bool has_reward)>;

class Runner {
 public:
  Runner(PpoAgent* agent, RunnerOptions options) : agent_(agent), opts_(options) {}
  // One episode; returns the sum of its rewards. Transitions carry over between episodes until
  // a rollout is complete.
  double RunEpisode(Environment& env, const DecisionCallback& on_decision = {});
  int updates() const { return updates_; }

 private:
  void MaybeUpdate();

  struct Pending {
    std::vector<float> observation;
    Decision decision;
  };
  PpoAgent* agent_;
  RunnerOptions opts_;
  std::map<int, std::vector<Transition>> buffers_;  // per worker
  std::map<int, std::vector<float>> latest_;        // per worker: the newest observation
  int updates_ = 0;
};

}  // namespace tteps::ppo
