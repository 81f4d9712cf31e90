#include "scheduler/ppo/sim_environment.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace tteps::ppo {

SimEnvironment::SimEnvironment(SimConfig config)
    : c_(std::move(config)), rng_(c_.seed), builder_(c_.alpha_min, c_.alpha_max) {
  const size_t w = c_.compute_s.size();
  if (w == 0) throw std::invalid_argument("the simulation needs at least one worker");
  std::vector<int64_t> grid;
  for (int64_t a = c_.alpha_min; a <= c_.alpha_max; a *= 2) grid.push_back(a);
  // Exhaustive search over the grid (small: 5^W).
  std::vector<size_t> idx(w, 0);
  double best = -1;
  while (true) {
    std::vector<int64_t> a(w);
    for (size_t i = 0; i < w; ++i) a[i] = grid[idx[i]];
    const double g = Goodput(a);
    if (g > best) best = g, best_ = a;
    size_t i = 0;
    while (i < w && ++idx[i] == grid.size()) idx[i++] = 0;
    if (i == w) break;
  }
  reference_goodput_ = Goodput(std::vector<int64_t>(w, c_.alpha_min));
}

double SimEnvironment::Goodput(const std::vector<int64_t>& alphas) const {
  double slowest = 0, trips = 0;
  for (size_t i = 0; i < alphas.size(); ++i) {
    slowest = std::max(slowest, alphas[i] * c_.compute_s[i]);
    trips += alphas[i] * c_.trips_per_microbatch;
  }
  return (trips / (trips + c_.s0)) / (slowest + c_.comm_s);
}

AgentObservation SimEnvironment::Reset() {
  const size_t w = c_.compute_s.size();
  std::vector<int64_t> grid;
  for (int64_t a = c_.alpha_min; a <= c_.alpha_max; a *= 2) grid.push_back(a);
  alphas_.assign(w, c_.alpha_min);
  if (c_.random_start) {
    for (auto& a : alphas_)
      a = grid[std::uniform_int_distribution<size_t>(0, grid.size() - 1)(rng_)];
  }
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
  for (auto& l : last_losses_) l.clear();
  for (int s = 0; s < c_.steps_per_window; ++s) {
    excess_loss_ *= std::exp(-c_.k * trips / (trips + c_.s0));
    for (auto& l : last_losses_) l.push_back(0.5 + excess_loss_ + noise(rng_));
  }
}

AgentObservation SimEnvironment::Observe(int worker) {
  const double slowest_plus = [&] {
    double s = 0;
    for (size_t i = 0; i < alphas_.size(); ++i) s = std::max(s, alphas_[i] * c_.compute_s[i]);
    return s + c_.comm_s;
  }();
  WindowReport r;
  r.worker = worker;
  r.alpha = alphas_[worker];
  r.losses = last_losses_[worker];
  r.compute_s = alphas_[worker] * c_.compute_s[worker];
  r.step_s = slowest_plus;
  r.wait_s = slowest_plus - c_.comm_s - r.compute_s;
  const double mean =
      std::accumulate(c_.compute_s.begin(), c_.compute_s.end(), 0.0) / c_.compute_s.size();
  JobView view;
  view.relative_compute = c_.compute_s[worker] / mean;
  view.relative_step = r.compute_s / (slowest_plus - c_.comm_s);
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
  alphas_[turn_] = ApplyAction(alphas_[turn_], action, c_.alpha_min, c_.alpha_max);
  ++decisions_;
  SimulateWindow();
  EnvStep out;
  turn_ = (turn_ + 1) % static_cast<int>(alphas_.size());
  out.next = Observe(turn_);
  out.reward = Goodput(alphas_) / reference_goodput_;
  out.has_reward = true;
  out.done = decisions_ >= c_.decisions_per_worker * static_cast<int>(alphas_.size());
  return out;
}

int SimEnvironment::OracleAction() const {
  const int64_t a = alphas_[turn_], best = best_[turn_];
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
