#include "scheduler/ppo/gae.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tteps::ppo {

Advantages ComputeGae(const std::vector<double>& rewards, const std::vector<double>& values,
                      const std::vector<bool>& dones, double last_value, double gamma,
                      double lambda) {
  const size_t n = rewards.size();
  if (values.size() != n || dones.size() != n) {
    throw std::invalid_argument("GAE needs as many values and dones as rewards");
  }
  Advantages out;
  out.advantages.assign(n, 0.0);
  out.returns.assign(n, 0.0);
  double next_value = last_value, next_advantage = 0;
  for (size_t i = n; i-- > 0;) {
    const double keep = dones[i] ? 0.0 : 1.0;
    const double delta = rewards[i] + gamma * next_value * keep - values[i];
    next_advantage = delta + gamma * lambda * keep * next_advantage;
    out.advantages[i] = next_advantage;
    out.returns[i] = next_advantage + values[i];
    next_value = values[i];
  }
  return out;
}

void RunningStat::Add(double x) {
  ++n_;
  const double d = x - mean_;
  mean_ += d / n_;
  m2_ += d * (x - mean_);
}

double RunningStat::Normalise(double x, double clip) const {
  if (n_ < 2) return std::clamp(x, -clip, clip);
  const double z = (x - mean_) / std::sqrt(variance() + 1e-8);
  return std::clamp(z, -clip, clip);
}

}  // namespace tteps::ppo
