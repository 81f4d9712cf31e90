#include "scheduler/worker_book.h"

#include <algorithm>
#include <climits>

namespace tteps::scheduler {

const WorkerProgress& WorkerBook::Add(int worker, const TrainReport& r) {
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
  return p;
}

int64_t WorkerBook::StepOf(int worker) const {
  const auto it = workers_.find(worker);
  return it != workers_.end() ? it->second.step : 0;
}

int64_t WorkerBook::MinStep(const std::set<int>& lost) const {
  int64_t min_step = INT64_MAX;
  for (const auto& [w, p] : workers_) {
    if (!lost.count(w)) min_step = std::min(min_step, p.step);
  }
  return min_step == INT64_MAX ? 0 : min_step;
}

int64_t WorkerBook::MaxStep(const std::set<int>& lost) const {
  int64_t step = 0;
  for (const auto& [w, p] : workers_) {
    if (!lost.count(w)) step = std::max(step, p.step);
  }
  return step;
}

double WorkerBook::MeanLoss(const std::set<int>& lost) const {
  double sum = 0;
  int n = 0;
  for (const auto& [w, p] : workers_) {
    if (lost.count(w)) continue;
    sum += p.loss;
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

double WorkerBook::TripsPerSecond(const std::set<int>& lost) const {
  double sum = 0;
  for (const auto& [w, p] : workers_) {
    if (!lost.count(w)) sum += p.trips_per_s;
  }
  return sum;
}

WorkerProgress WorkerBook::First(const std::set<int>& lost) const {
  for (const auto& [w, p] : workers_) {
    if (!lost.count(w)) return p;
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
