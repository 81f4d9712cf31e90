#include "scheduler/ppo/live_environment.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace tteps::ppo {

LiveEnvironment::LiveEnvironment(int64_t alpha_min, int64_t alpha_max)
    : alpha_min_(alpha_min), alpha_max_(alpha_max), builder_(alpha_min, alpha_max) {}

double LiveEnvironment::Reward(const WindowReport& r, bool* has_reward) {
  if (r.losses.empty()) {
    *has_reward = false;
    return 0;
  }
  const double mean = std::accumulate(r.losses.begin(), r.losses.end(), 0.0) / r.losses.size();
  trips_.Add(static_cast<double>(r.trips));
  const double weight =
      trips_.mean() > 0 ? std::min(1.0, 0.3 * static_cast<double>(r.trips) / trips_.mean()) : 0.3;
  smoothed_loss_ = have_loss_ ? smoothed_loss_ + weight * (mean - smoothed_loss_) : mean;
  have_loss_ = true;
  const double now = std::chrono::duration<double>(Clock::now() - start_).count();
  auto it = last_.find(r.worker);
  *has_reward = it != last_.end() && now > it->second.second;
  double reward = 0;
  if (*has_reward) {
    const double raw = (it->second.first - smoothed_loss_) / (now - it->second.second);
    reward_square_sum_ += raw * raw;
    ++rewards_;
    const double rms = std::sqrt(reward_square_sum_ / rewards_);
    reward = rms > 0 ? std::clamp(raw / rms, -5.0, 5.0) : 0.0;
  }
  last_[r.worker] = {smoothed_loss_, now};
  return reward;
}

void LiveEnvironment::Push(const WindowReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  Report r;
  r.window = report;
  r.reward = Reward(report, &r.has_reward);
  reports_.push_back(std::move(r));
  cv_.notify_all();
}

std::optional<scheduler::AlphaDecision> LiveEnvironment::PollDecision() {
  std::lock_guard<std::mutex> lock(mu_);
  if (decisions_.empty()) return std::nullopt;
  auto d = std::move(decisions_.front());
  decisions_.pop_front();
  return d;
}

void LiveEnvironment::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

bool LiveEnvironment::Next(std::unique_lock<std::mutex>& lock, Report* out) {
  cv_.wait(lock, [this] { return finished_ || !reports_.empty(); });
  if (reports_.empty()) return false;
  *out = std::move(reports_.front());
  reports_.pop_front();
  return true;
}

AgentObservation LiveEnvironment::Observe(const Report& r) {
  const WindowReport& w = r.window;
  compute_per_microbatch_[w.worker] = w.compute_s / std::max<int64_t>(1, w.alpha);
  double mean = 0;
  for (const auto& [worker, c] : compute_per_microbatch_) mean += c;
  mean /= compute_per_microbatch_.size();
  AgentObservation o;
  o.worker = w.worker;
  o.alpha = w.alpha;
  o.features = builder_.Build(w, mean > 0 ? compute_per_microbatch_[w.worker] / mean : 1.0);
  return o;
}

AgentObservation LiveEnvironment::Reset() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!Next(lock, &current_)) {
    // The job ended before any report: a neutral observation; the next Step ends the episode.
    current_ = Report{};
    current_obs_ = AgentObservation{};
    current_obs_.features.assign(kObservationSize, 0.0f);
    return current_obs_;
  }
  current_obs_ = Observe(current_);
  return current_obs_;
}

EnvStep LiveEnvironment::Step(int action) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!finished_) {
    scheduler::AlphaDecision d;
    d.worker = current_obs_.worker;
    d.step = current_.window.step;
    d.old_alpha = current_obs_.alpha;
    d.new_alpha = ApplyAction(d.old_alpha, action, alpha_min_, alpha_max_);
    d.action = ActionName(action);
    d.observation = current_obs_.features;
    d.reward = current_.reward;
    d.has_reward = current_.has_reward;
    decisions_.push_back(std::move(d));
  }
  EnvStep out;
  if (!Next(lock, &current_)) {
    out.next = current_obs_;
    out.done = true;
    return out;
  }
  current_obs_ = Observe(current_);
  out.next = current_obs_;
  out.reward = current_.reward;
  out.has_reward = current_.has_reward;
  return out;
}

std::string LiveEnvironment::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream os;
  os << "worker " << current_obs_.worker << " at alpha " << current_obs_.alpha << ", "
     << reports_.size() << " reports queued, smoothed loss " << smoothed_loss_;
  return os.str();
}

}  // namespace tteps::ppo
