#include "scheduler/ppo/job_policy.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "scheduler/ppo/agent_thread.h"
#include "scheduler/ppo/live_environment.h"
#include "scheduler/speed_shares.h"
#include "scheduler/split_policy.h"

namespace tteps::ppo {

WindowReport MergeWindows(const std::vector<WindowReport>& windows, int64_t mean_alpha) {
  WindowReport m;
  m.alpha = mean_alpha;
  if (windows.empty()) return m;
  size_t steps = windows.front().losses.size();
  for (const auto& w : windows) steps = std::min(steps, w.losses.size());
  m.losses.assign(steps, 0.0);
  const double n = static_cast<double>(windows.size());
  NoiseSum noise;
  for (const auto& w : windows) {
    m.step = std::max(m.step, w.step);
    m.extra += w.extra;
    for (size_t s = 0; s < steps; ++s) m.losses[s] += w.losses[s] / n;
    m.trips += w.trips;
    m.window_s = std::max(m.window_s, w.window_s);
    m.compute_s = std::max(m.compute_s, w.compute_s);
    m.step_s = std::max(m.step_s, w.step_s);
    m.wait_s += w.wait_s / n;
    m.staleness += w.staleness / n;
    if (w.noise_steps > 0) {
      noise.Add(w.noise, static_cast<double>(w.noise_steps));
      m.noise_steps += w.noise_steps;
    }
  }
  if (m.noise_steps > 0) m.noise = noise.Mean();
  return m;
}

namespace {

class JobPolicy : public scheduler::SplitPolicy {
 public:
  JobPolicy(const LivePolicyOptions& o, int workers, int64_t accumulation)
      : SplitPolicy(workers, accumulation),
        lo_(o.alpha_min),
        hi_(o.alpha_max),
        mean_alpha_(accumulation),
        windows_(workers),
        env_(o.alpha_min, o.alpha_max, o.step_model),
        agent_(o, &env_) {}
  ~JobPolicy() override { Finish(); }

  void Observe(const WindowReport& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    // A window with no step at the slice's accumulation says little about it.
    if (!Measure(r)) return;
    windows_[static_cast<size_t>(r.worker)] = r;
    std::vector<WindowReport> round;
    std::vector<double> seconds, micro_batches;
    for (size_t i = 0; i < alpha_.size(); ++i) {
      if (orphaned_[i]) continue;
      if (!windows_[i]) return;  // the round is not complete
      round.push_back(*windows_[i]);
      seconds.push_back(meter_.seconds(i));
      micro_batches.push_back(static_cast<double>(alpha_[i]) + extra_[i]);
    }
    if (round.empty()) return;
    for (auto& window : windows_) window.reset();
    env_.Push(MergeWindows(round, mean_alpha_), SplitView(seconds, micro_batches));
  }

  std::optional<scheduler::AlphaDecision> Poll() override {
    if (auto d = env_.PollDecision()) Split(*d);
    return decisions_.Pop();
  }

  std::string Finish() override { return agent_.Finish(); }
  std::string Record() const override { return agent_.Record(); }

 private:
  void Forget(size_t slice) override { windows_[slice].reset(); }

  // The agent's new mean accumulation as a split by speed of mean x the slices it may change.
  void Split(const scheduler::AlphaDecision& job) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<size_t> owned;
    std::vector<double> seconds, extra;
    for (size_t i = 0; i < alpha_.size(); ++i) {
      if (orphaned_[i]) continue;
      if (meter_.seconds(i) <= 0) return;  // joined since the round: measured next round
      owned.push_back(i);
      seconds.push_back(meter_.seconds(i));
      extra.push_back(extra_[i]);
    }
    if (owned.empty()) return;
    const bool resized = job.new_alpha != mean_alpha_;
    mean_alpha_ = job.new_alpha;
    const auto total = mean_alpha_ * static_cast<int64_t>(owned.size());
    const std::vector<int64_t> shares = scheduler::SpeedShares(seconds, total, lo_, hi_, extra);
    std::vector<int64_t> next = alpha_;
    for (size_t k = 0; k < owned.size(); ++k) next[owned[k]] = shares[k];
    // As the speed policy: a new split of the same batch only for a 5% shorter step.
    if (!resized && StepSeconds(next) > 0.95 * StepSeconds(alpha_)) return;
    for (size_t i : owned) {
      if (next[i] == alpha_[i]) continue;
      scheduler::AlphaDecision d = job;
      d.worker = static_cast<int>(i);
      d.old_alpha = alpha_[i];
      d.new_alpha = next[i];
      d.action = job.action + std::string("/split");
      decisions_.Push(std::move(d));
      alpha_[i] = next[i];
      windows_[i].reset();  // the next round waits for its window at the new accumulation
    }
  }

  const int64_t lo_, hi_;
  int64_t mean_alpha_;  // the agent's: the global batch over the slices it may change
  std::vector<std::optional<WindowReport>> windows_;  // this round's, per slice
  LiveEnvironment env_;
  AgentThread agent_;  // after env_: it plays env_ until destroyed
};

bool PowerOfTwoTimes(int64_t value, int64_t base) {
  if (base < 1 || value < base || value % base != 0) return false;
  const int64_t q = value / base;
  return (q & (q - 1)) == 0;
}

}  // namespace

std::unique_ptr<scheduler::AccumulationPolicy> MakeJobPolicy(const LivePolicyOptions& options,
                                                             int workers, int64_t accumulation) {
  if (workers < 1 || accumulation > options.alpha_max ||
      !PowerOfTwoTimes(accumulation, options.alpha_min)) {
    throw std::invalid_argument(
        "--accumulation_policy ppo --ppo_scope job: --accumulation must be --accumulation_min "
        "times a power of two, at most --accumulation_max (the agent halves and doubles it)");
  }
  return std::make_unique<JobPolicy>(options, workers, accumulation);
}

}  // namespace tteps::ppo
