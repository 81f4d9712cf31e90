#include "scheduler/ppo/sim_environment.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "scheduler/speed_shares.h"

namespace tteps::ppo {

SimEnvironment::SimEnvironment(SimConfig config)
    : c_(std::move(config)), rng_(c_.seed), builder_(c_.alpha_min, c_.alpha_max) {
  const size_t w = c_.compute_s.size();
  if (w == 0) throw std::invalid_argument("the simulation needs at least one worker");
  const std::vector<int64_t> grid = Grid();
  double best = -1;
  if (c_.job_scope) {  // the speed split of W times each value of the grid
    for (int64_t m : grid) {
      const double g = Goodput(SplitOf(m));
      if (g > best) best = g, best_ = SplitOf(m), best_mean_ = m;
    }
  } else {  // exhaustive search over the grid (small: 5^W)
    std::vector<size_t> idx(w, 0);
    while (true) {
      std::vector<int64_t> a(w);
      for (size_t i = 0; i < w; ++i) a[i] = grid[idx[i]];
      const double g = Goodput(a);
      if (g > best) best = g, best_ = a;
      size_t i = 0;
      while (i < w && ++idx[i] == grid.size()) idx[i++] = 0;
      if (i == w) break;
    }
  }
  reference_goodput_ = Goodput(std::vector<int64_t>(w, c_.alpha_min));
}

std::vector<int64_t> SimEnvironment::Grid() const {
  std::vector<int64_t> grid;
  for (int64_t a = c_.alpha_min; a <= c_.alpha_max; a *= 2) grid.push_back(a);
  return grid;
}

std::vector<int64_t> SimEnvironment::SplitOf(int64_t mean_alpha) const {
  const auto w = static_cast<int64_t>(c_.compute_s.size());
  return scheduler::SpeedShares(c_.compute_s, mean_alpha * w, c_.alpha_min, c_.alpha_max);
}

double SimEnvironment::Goodput(const std::vector<int64_t>& alphas) const {
  double slowest = 0, trips = 0;
  for (size_t i = 0; i < alphas.size(); ++i) {
    slowest = std::max(slowest, alphas[i] * c_.compute_s[i]);
    trips += alphas[i] * c_.trips_per_microbatch;
  }
  return StepProgress(c_.step_model, c_.s0, trips) / (slowest + c_.comm_s);
}

AgentObservation SimEnvironment::Reset() {
  const size_t w = c_.compute_s.size();
  const std::vector<int64_t> grid = Grid();
  const auto draw = [&] {
    return grid[std::uniform_int_distribution<size_t>(0, grid.size() - 1)(rng_)];
  };
  alphas_.assign(w, c_.alpha_min);
  if (c_.random_start && !c_.job_scope) {
    for (auto& a : alphas_) a = draw();
  }
  if (c_.job_scope) {
    mean_alpha_ = c_.random_start ? draw() : c_.alpha_min;
    alphas_ = SplitOf(mean_alpha_);
  }
  jitter_ =
      c_.step_jitter > 0 ? std::uniform_real_distribution<double>(0.0, c_.step_jitter)(rng_) : 0.0;
  excess_loss_ = 1;
  last_losses_.assign(w, {});
  turn_ = 0;
  decisions_ = 0;
  SimulateWindow();  // at the starting alphas, so that every worker has something to report
  return Observe(0);
}

void SimEnvironment::SimulateWindow() {
  double trips = 0;
  for (auto a : alphas_) trips += a * c_.trips_per_microbatch;
  std::normal_distribution<double> noise(0.0, c_.loss_noise);
  std::normal_distribution<double> z(0.0, 1.0);
  for (auto& l : last_losses_) l.clear();
  const size_t w = alphas_.size();
  last_wait_s_.assign(w, 0.0);
  last_step_s_ = 0;
  std::vector<double> t(w);
  const double per_step = 1.0 / c_.steps_per_window;
  for (int s = 0; s < c_.steps_per_window; ++s) {
    excess_loss_ *= std::exp(-c_.k * StepProgress(c_.step_model, c_.s0, trips));
    for (auto& l : last_losses_) l.push_back(0.5 + excess_loss_ + noise(rng_));
    for (size_t i = 0; i < w; ++i) {
      // Log-normal of mean 1.
      const double factor = jitter_ > 0 ? std::exp(jitter_ * z(rng_) - jitter_ * jitter_ / 2) : 1;
      t[i] = alphas_[i] * c_.compute_s[i] * factor;
    }
    const double slowest = *std::max_element(t.begin(), t.end());
    for (size_t i = 0; i < w; ++i) last_wait_s_[i] += (slowest - t[i]) * per_step;
    last_step_s_ += (slowest + c_.comm_s) * per_step;
  }
  last_seconds_.resize(w);
  for (size_t i = 0; i < w; ++i) last_seconds_[i] = t[i] / alphas_[i];
}

AgentObservation SimEnvironment::Observe(int worker) {
  double slowest = 0;
  for (size_t i = 0; i < alphas_.size(); ++i) {
    slowest = std::max(slowest, alphas_[i] * c_.compute_s[i]);
  }
  WindowReport r;
  r.worker = worker;
  r.alpha = alphas_[worker];
  r.losses = last_losses_[worker];
  r.compute_s = alphas_[worker] * c_.compute_s[worker];
  r.step_s = last_step_s_;
  r.wait_s = last_wait_s_[worker];
  const double mean =
      std::accumulate(c_.compute_s.begin(), c_.compute_s.end(), 0.0) / c_.compute_s.size();
  JobView view;
  view.relative_compute = c_.compute_s[worker] / mean;
  view.relative_step = r.compute_s / slowest;
  if (c_.job_scope) {  // the merged window, as job_policy.h's MergeWindows builds it
    r.alpha = mean_alpha_;
    r.compute_s = slowest;
    r.wait_s = std::accumulate(last_wait_s_.begin(), last_wait_s_.end(), 0.0) / alphas_.size();
    view = SplitView(last_seconds_, std::vector<double>(alphas_.begin(), alphas_.end()));
  }
  double batch = 0;
  for (auto a : alphas_) batch += a * c_.trips_per_microbatch;
  view.batch_over_noise = batch / c_.s0;  // s0 plays the noise scale's part
  AgentObservation o;
  o.worker = worker;
  o.alpha = alphas_[worker];
  o.features = builder_.Build(r, view);
  return o;
}

EnvStep SimEnvironment::Step(int action) {
  if (c_.job_scope) {
    mean_alpha_ = ApplyAction(mean_alpha_, action, c_.alpha_min, c_.alpha_max);
    alphas_ = SplitOf(mean_alpha_);
  } else {
    alphas_[turn_] = ApplyAction(alphas_[turn_], action, c_.alpha_min, c_.alpha_max);
  }
  ++decisions_;
  SimulateWindow();
  EnvStep out;
  if (!c_.job_scope) turn_ = (turn_ + 1) % static_cast<int>(alphas_.size());
  out.next = Observe(turn_);
  out.reward = Goodput(alphas_) / reference_goodput_;
  out.has_reward = true;
  const int deciders = c_.job_scope ? 1 : static_cast<int>(alphas_.size());
  out.done = decisions_ >= c_.decisions_per_worker * deciders;
  return out;
}

int SimEnvironment::OracleAction() const {
  const int64_t a = c_.job_scope ? mean_alpha_ : alphas_[turn_];
  const int64_t best = c_.job_scope ? best_mean_ : best_[turn_];
  return a < best ? 2 : a > best ? 0 : 1;
}

std::string SimEnvironment::Render() const {
  std::ostringstream os;
  os << "decision " << decisions_ << ", alphas [";
  for (size_t i = 0; i < alphas_.size(); ++i) os << (i ? "," : "") << alphas_[i];
  os << "] best [";
  for (size_t i = 0; i < best_.size(); ++i) os << (i ? "," : "") << best_[i];
  os << "], goodput " << Goodput(alphas_) / reference_goodput_ << " x alpha_min's";
  return os.str();
}

double OracleReturn(const SimConfig& config) {
  SimEnvironment env(config);
  env.Reset();
  double total = 0;
  while (true) {
    const auto step = env.Step(env.OracleAction());
    total += step.reward;
    if (step.done) return total;
  }
}

}  // namespace tteps::ppo
