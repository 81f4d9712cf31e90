// PPO2 (Schulman et al. 2017) in LibTorch, behind a torch-free interface: an actor-critic MLP
// (two tanh layers; a policy head over the actions and a value head), the clipped surrogate
// objective, GAE, a value loss and an entropy bonus, several epochs of minibatch updates per
// rollout with Adam. Seeded: the same seed and data give the same decisions and weights.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tteps::ppo {

struct PpoConfig {
  int observation_size = 11;  // kObservationSize (observation.h), asserted there
  int num_actions = 3;
  int hidden = 64;
  double lr = 3e-4;
  double gamma = 0.9;
  double lambda = 0.95;
  double clip = 0.2;  // epsilon of the clipped surrogate
  double value_coef = 0.5;
  double entropy_coef = 0.01;
  int epochs = 4;      // passes over each rollout
  int minibatch = 32;  // transitions per gradient step
  double max_grad_norm = 0.5;
  uint64_t seed = 1;

  void Validate() const;
};

struct Decision {
  int action = 1;
  double log_prob = 0;
  double value = 0;
};

struct Transition {
  std::vector<float> observation;
  int action = 1;
  double log_prob = 0, value = 0, reward = 0;
  bool done = false;  // the episode ended after this transition
};

struct UpdateStats {
  double policy_loss = 0, value_loss = 0, entropy = 0, clip_fraction = 0;
  int64_t transitions = 0;
};

class PpoAgent {
 public:
  explicit PpoAgent(PpoConfig config);
  ~PpoAgent();
  PpoAgent(const PpoAgent&) = delete;
  PpoAgent& operator=(const PpoAgent&) = delete;

  // Samples an action from the policy (greedy: the most likely one).
  Decision Act(const std::vector<float>& observation, bool greedy = false);
  double Value(const std::vector<float>& observation);
  // One PPO2 update from trajectories (one per worker, in order), each bootstrapped with the
  // value of the state after its last transition (ignored if that transition is done).
  UpdateStats Update(const std::vector<std::vector<Transition>>& trajectories,
                     const std::vector<double>& last_values);

  // The policy (network weights and the configuration's sizes) to and from a file. Load throws
  // std::runtime_error if the file is unreadable or of another shape.
  void Save(const std::string& path) const;
  void Load(const std::string& path);
  const PpoConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tteps::ppo
