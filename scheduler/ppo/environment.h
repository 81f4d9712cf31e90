// The agent's view of training as an environment (reset, step, render), with two
// implementations: the live job (live_environment.h) and a simulation (sim_environment.h).
//
// Several workers share one agent. Each observation belongs to one worker, and the action
// returned to Step applies to that worker. The reward a step returns is for the previous
// action of the worker the NEXT observation belongs to: in a live job the effect of a decision
// is known only when that worker reports its next window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tteps::ppo {

struct AgentObservation {
  int worker = 0;
  int64_t alpha = 1;            // the worker's alpha during the observed window
  std::vector<float> features;  // kObservationSize floats (observation.h)
};

struct EnvStep {
  AgentObservation next;
  double reward = 0;  // for next.worker's previous action
  bool has_reward = false;
  bool done = false;
};

class Environment {
 public:
  virtual ~Environment() = default;
  virtual AgentObservation Reset() = 0;
  virtual EnvStep Step(int action) = 0;
  virtual std::string Render() const = 0;
};

}  // namespace tteps::ppo
