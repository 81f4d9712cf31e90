#include "scheduler/worker_book.h"

#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

namespace tteps::scheduler {

void WorkerBook::Leave(int worker) {
  const auto it = workers_.find(worker);
  if (it == workers_.end() || lost_.count(worker)) return;
  live_steps_.erase(live_steps_.find(it->second.step));
  loss_sum_ -= it->second.loss;
  speed_sum_ -= it->second.trips_per_s;
}

void WorkerBook::Enter(int worker) {
  if (lost_.count(worker)) return;
  const WorkerProgress& p = workers_[worker];
  live_steps_.insert(p.step);
  loss_sum_ += p.loss;
  speed_sum_ += p.trips_per_s;
  // Sums that are only ever added to and subtracted from drift: added up afresh once per as
  // many changes as there are workers (O(1) a change).
  if (++changes_ < static_cast<int64_t>(workers_.size())) return;
  changes_ = 0;
  loss_sum_ = speed_sum_ = 0;
  for (const auto& [w, q] : workers_) {
    if (lost_.count(w)) continue;
    loss_sum_ += q.loss;
    speed_sum_ += q.trips_per_s;
  }
}

void WorkerBook::Lose(int worker) {
  Leave(worker);
  lost_.insert(worker);
}

void WorkerBook::SetStep(int worker, int64_t step) {
  Leave(worker);
  workers_[worker].step = step;
  Enter(worker);
}

const WorkerProgress& WorkerBook::Add(int worker, const TrainReport& r) {
  Leave(worker);
  WorkerProgress& p = workers_[worker];
  const int64_t steps = r.step - p.step;
  p.step = r.step;
  p.epoch = r.epoch;
  p.trips += r.trips;
  p.loss = r.loss;
  p.trips_per_s = r.trips_per_s;
  p.compute_s += r.compute_s * steps;
  p.push_s += r.Exchange("push_s") * steps;
  p.pull_s += r.Exchange("pull_s") * steps;
  p.push_bytes += r.Exchange("push_bytes") * steps;
  p.pull_bytes += r.Exchange("pull_bytes") * steps;
  p.wait_s += r.wait_s * steps;
  p.allreduce_s += r.Exchange("allreduce_s") * steps;
  p.steps_timed += steps;
  p.peak_rss_mb = std::max(p.peak_rss_mb, r.peak_rss_mb);
  p.peak_private_mb = std::max(p.peak_private_mb, r.peak_private_mb);
  p.peak_shared_mb = std::max(p.peak_shared_mb, r.peak_shared_mb);
  p.cpu_gemm = r.cpu_gemm;
  p.blas = r.blas;
  Enter(worker);
  return p;
}

int64_t WorkerBook::StepOf(int worker) const {
  const auto it = workers_.find(worker);
  return it != workers_.end() ? it->second.step : 0;
}

int64_t WorkerBook::MaxStep() const {
  int64_t step = 0;
  for (const auto& [w, p] : workers_) step = std::max(step, p.step);
  return step;
}

int64_t WorkerBook::LiveMaxStep() const {
  int64_t step = 0;
  for (const auto& [w, p] : workers_) {
    if (!lost_.count(w)) step = std::max(step, p.step);
  }
  return step;
}

WorkerSpread WorkerBook::LiveSpread() const {
  std::vector<double> losses;
  std::vector<std::pair<double, int>> speeds;
  for (const auto& [w, p] : workers_) {
    if (lost_.count(w) || p.steps_timed == 0) continue;
    losses.push_back(p.loss);
    speeds.emplace_back(p.trips_per_s, w);
  }
  WorkerSpread s;
  s.workers = static_cast<int>(losses.size());
  if (losses.empty()) return s;
  const size_t mid = losses.size() / 2;
  std::nth_element(losses.begin(), losses.begin() + mid, losses.end());
  s.loss_median = losses[mid];
  s.loss_min = *std::min_element(losses.begin(), losses.end());
  s.loss_max = *std::max_element(losses.begin(), losses.end());
  std::nth_element(speeds.begin(), speeds.begin() + mid, speeds.end());
  s.speed_median = speeds[mid].first;
  const auto [slowest, fastest] = std::minmax_element(speeds.begin(), speeds.end());
  s.speed_min = slowest->first;
  s.slowest = slowest->second;
  s.speed_max = fastest->first;
  return s;
}

WorkerProgress WorkerBook::LiveFirst() const {
  for (const auto& [w, p] : workers_) {
    if (!lost_.count(w)) return p;
  }
  return {};
}

int64_t WorkerBook::MaxEpoch() const {
  int64_t epoch = 0;
  for (const auto& [w, p] : workers_) epoch = std::max(epoch, p.epoch);
  return epoch;
}

WorkerProgress WorkerBook::Sums() const {
  WorkerProgress s;
  for (const auto& [w, p] : workers_) {
    s.step = std::max(s.step, p.step);
    s.epoch = std::max(s.epoch, p.epoch);
    s.trips += p.trips;
    s.compute_s += p.compute_s;
    s.push_s += p.push_s;
    s.pull_s += p.pull_s;
    s.wait_s += p.wait_s;
    s.push_bytes += p.push_bytes;
    s.pull_bytes += p.pull_bytes;
    s.allreduce_s += p.allreduce_s;
    s.steps_timed += p.steps_timed;
  }
  return s;
}

std::vector<double> WorkerBook::Peaks(double WorkerProgress::*field) const {
  std::vector<double> peaks;
  for (const auto& [w, p] : workers_) peaks.push_back(p.*field);
  return peaks;
}

std::vector<std::string> WorkerBook::Texts(std::string WorkerProgress::*field) const {
  std::vector<std::string> texts;
  for (const auto& [w, p] : workers_) texts.push_back(p.*field);
  return texts;
}

}  // namespace tteps::scheduler
