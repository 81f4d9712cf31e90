#include "common/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace tteps {

double LearningRate(const OptimizerConfig& c, int64_t step) {
  if (step < c.warmup_steps) {
    return c.lr * static_cast<double>(step + 1) / static_cast<double>(c.warmup_steps);
  }
  const int64_t t = step - c.warmup_steps;
  if (c.lr_schedule == "cosine") {
    const int64_t span = std::max<int64_t>(1, c.lr_steps - c.warmup_steps);
    const double x = static_cast<double>(std::min(t, span)) / static_cast<double>(span);
    return c.lr * 0.5 * (1.0 + std::cos(M_PI * x));
  }
  if (c.lr_schedule == "step") {
    return c.lr * std::pow(c.lr_decay, static_cast<double>(t / c.lr_decay_every));
  }
  return c.lr;
}

}  // namespace tteps
