// The arithmetic of PPO2 that needs no LibTorch: generalised advantage estimation and running
// mean / variance for normalising observations and rewards.
#pragma once

#include <cstdint>
#include <vector>

namespace tteps::ppo {

struct Advantages {
  std::vector<double> advantages;
  std::vector<double> returns;  // advantages + values: the critic's targets
};

// GAE(gamma, lambda) over one trajectory: delta_t = r_t + gamma V(s_t+1) (1 - done_t) - V(s_t),
// A_t = delta_t + gamma lambda (1 - done_t) A_t+1. `last_value` is V of the state after the
// last transition (0 if it ended an episode).
Advantages ComputeGae(const std::vector<double>& rewards, const std::vector<double>& values,
                      const std::vector<bool>& dones, double last_value, double gamma,
                      double lambda);

// Welford's running mean and variance.
class RunningStat {
 public:
  void Add(double x);
  int64_t count() const { return n_; }
  double mean() const { return mean_; }
  double variance() const { return n_ > 1 ? m2_ / (n_ - 1) : 1.0; }
  // (x - mean) / std, clipped to +-clip; x unchanged until two values have been seen.
  double Normalise(double x, double clip = 5.0) const;

 private:
  int64_t n_ = 0;
  double mean_ = 0, m2_ = 0;
};

}  // namespace tteps::ppo
