#include "scheduler/ppo/observation.h"

#include <algorithm>
#include <cmath>

#include "scheduler/ppo/ppo.h"

namespace tteps::ppo {

static_assert(PpoConfig{}.observation_size == kObservationSize,
              "the agent's default input is the observation built here");

LossStats SummariseLosses(const std::vector<double>& losses) {
  LossStats s;
  if (losses.empty()) return s;
  s.initial = losses.front();
  s.last = losses.back();
  s.minimum = *std::min_element(losses.begin(), losses.end());
  s.maximum = *std::max_element(losses.begin(), losses.end());
  for (size_t i = 1; i < losses.size(); ++i) {
    s.max_change = std::max(s.max_change, std::abs(losses[i] - losses[i - 1]));
  }
  return s;
}

int64_t ApplyAction(int64_t alpha, int action, int64_t lo, int64_t hi) {
  if (action == 0) alpha /= 2;
  if (action == 2) alpha *= 2;
  return std::clamp(alpha, lo, hi);
}

const char* ActionName(int action) {
  static const char* kNames[] = {"halve", "keep", "double"};
  return action >= 0 && action < kNumActions ? kNames[action] : "unknown";
}

JobView SplitView(const std::vector<double>& seconds, const std::vector<double>& micro_batches) {
  JobView v;
  const size_t n = std::min(seconds.size(), micro_batches.size());
  double mean = 0, slowest = 0, slowest_step = 0, mean_step = 0;
  for (size_t i = 0; i < n; ++i) {
    mean += seconds[i] / n;
    slowest = std::max(slowest, seconds[i]);
    mean_step += seconds[i] * micro_batches[i] / n;
    slowest_step = std::max(slowest_step, seconds[i] * micro_batches[i]);
  }
  if (mean > 0) v.relative_compute = slowest / mean;
  if (slowest_step > 0) v.relative_step = mean_step / slowest_step;
  return v;
}

std::vector<float> ObservationBuilder::Build(const WindowReport& r, const JobView& job) {
  const double relative_compute = job.relative_compute;
  const LossStats s = SummariseLosses(r.losses);
  const double stats[5] = {s.initial, s.minimum, s.maximum, s.last, s.max_change};
  std::vector<float> obs(kObservationSize, 0.0f);
  for (int i = 0; i < 5; ++i) {
    loss_norm_[i].Add(stats[i]);
    obs[i] = static_cast<float>(loss_norm_[i].Normalise(stats[i]));
  }
  const double span = std::log2(static_cast<double>(alpha_max_) / alpha_min_);
  obs[5] = span > 0
               ? static_cast<float>(std::log2(static_cast<double>(r.alpha) / alpha_min_) / span)
               : 0.0f;
  obs[6] = relative_compute > 0
               ? static_cast<float>(std::clamp(std::log2(relative_compute), -2.0, 2.0))
               : 0.0f;
  obs[7] = r.step_s > 0 ? static_cast<float>(std::clamp(r.wait_s / r.step_s, 0.0, 1.0)) : 0.0f;
  obs[8] = static_cast<float>(r.staleness / (1.0 + std::max(0.0, r.staleness)));
  obs[9] = job.batch_over_noise > 0
               ? static_cast<float>(std::clamp(std::log2(job.batch_over_noise) / 4, -1.0, 1.0))
               : 0.0f;
  obs[10] = job.relative_step > 0
                ? static_cast<float>(std::clamp(std::log2(job.relative_step) / 4, -1.0, 0.0))
                : 0.0f;
  return obs;
}

}  // namespace tteps::ppo
