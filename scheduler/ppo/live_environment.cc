#include "scheduler/ppo/live_environment.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace tteps::ppo {

LiveEnvironment::LiveEnvironment(int64_t alpha_min, int64_t alpha_max, StepModel step_model)
    : alpha_min_(alpha_min),
      alpha_max_(alpha_max),
      step_model_(step_model),
      builder_(alpha_min, alpha_max) {}

namespace {
// As the goodput policy averages the noise (scheduler/goodput_policy.cc).
constexpr double kNoiseDecay = 0.9;
constexpr double kMinNoiseSteps = 8;
constexpr double kFarBelowNoise = 1.0 / 65536;
}  // namespace

void LiveEnvironment::Account(Report* out, const std::optional<JobView>& split) {
  const WindowReport& r = out->window;
  if (r.noise_steps > 0) {
    noise_.Decay(kNoiseDecay);
    noise_.Add(r.noise, static_cast<double>(r.noise_steps));
  }
  if (r.losses.empty() || r.alpha <= 0 || r.step_s <= 0) return;
  const bool seen = workers_.count(r.worker) > 0;
  WorkerState& w = workers_[r.worker];
  w.alpha = r.alpha;
  w.compute_per_micro = r.compute_s / r.alpha;
  w.trips_per_step = static_cast<double>(r.trips) / r.losses.size();
  w.step_s = r.step_s;

  double batch = 0, base = 0, throughput = 0, mean_compute = 0, slowest = 0, slowest_base = 0,
         step_s = 0;
  for (const auto& [id, s] : workers_) {
    batch += s.trips_per_step;
    base += s.trips_per_step / s.alpha * alpha_min_;
    throughput += s.trips_per_step / s.step_s;
    mean_compute += s.compute_per_micro / workers_.size();
    slowest = std::max(slowest, s.compute_per_micro * s.alpha);
    slowest_base = std::max(slowest_base, s.compute_per_micro * alpha_min_);
    step_s = std::max(step_s, s.step_s);
  }
  const double phi = noise_.weight() >= kMinNoiseSteps ? ResolvedNoiseScale(noise_) : NAN;
  if (split) {  // job scope: what its one merged window cannot tell
    out->view.relative_compute = split->relative_compute;
    out->view.relative_step = split->relative_step;
  } else {
    out->view.relative_compute = mean_compute > 0 ? w.compute_per_micro / mean_compute : 1.0;
    out->view.relative_step = slowest > 0 ? w.compute_per_micro * w.alpha / slowest : 1.0;
  }
  // An unresolved true gradient (phi infinite): the batch as far below the noise scale as the
  // observation tells (its log2 clamps), not "unknown" (0).
  out->view.batch_over_noise = std::isinf(phi)      ? kFarBelowNoise
                               : std::isfinite(phi) ? batch / std::max(phi, 1.0)
                                                    : 0.0;
  const double efficiency = StatisticalEfficiency(step_model_, phi, base, batch);
  // The reference: every worker at alpha_min, its step the slowest one's compute there plus
  // the exchange's own time now (the slowest worker's step beyond its compute).
  const double exchange_s = std::max(0.0, step_s - slowest);
  const double reference = base / std::max(slowest_base + exchange_s, 1e-9);
  last_goodput_ = throughput * efficiency / reference;
  out->reward = last_goodput_;
  out->has_reward = seen;  // its previous window carried a decision
}

void LiveEnvironment::Push(const WindowReport& report, const std::optional<JobView>& split) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  Report r;
  r.window = report;
  Account(&r, split);
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
  AgentObservation o;
  o.worker = r.window.worker;
  o.alpha = r.window.alpha;
  o.features = builder_.Build(r.window, r.view);
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
     << reports_.size() << " reports queued, goodput " << last_goodput_ << " x alpha_min's";
  return os.str();
}

}  // namespace tteps::ppo
