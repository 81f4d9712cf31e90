#include "common/topics/train_report.h"

#include <limits>

#include "common/peak_memory.h"

namespace tteps {

double TrainReport::Exchange(const std::string& name) const {
  for (const auto& [n, v] : exchange) {
    if (n == name) return v;
  }
  return 0;
}

JsonObject TrainReport::ToJson() const {
  JsonObject o;
  o.Add("type", "train")
      .Add("worker", worker)
      .Add("step", step)
      .Add("epoch", epoch)
      .Add("wall_s", wall_s)
      .Add("loss", loss)
      .Add("trips", trips)
      .Add("trips_per_s", trips_per_s)
      .Add("accumulation", accumulation);
  if (adopted > 0) o.Add("adopted_micro_batches", adopted);
  o.Add("compute_s", compute_s).Add("wait_s", wait_s);
  for (const auto& [name, value] : exchange) o.Add(name, value);
  // null where the window measured nothing (accumulation 1) or |G|^2 came out not positive.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  o.Add("gradient_noise_scale", noise_steps > 0 ? NoiseScale(noise) : nan)
      .Add("gradient_sq", noise_steps > 0 ? noise.grad_sq : nan)
      .Add("gradient_trace", noise_steps > 0 ? noise.trace : nan);
  o.Add("window_s", window_s)
      .Add("peak_rss_mb", peak_rss_mb)
      .Add("peak_private_mb", peak_private_mb)
      .Add("peak_shared_mb", peak_shared_mb)
      .Add("cpu_gemm", cpu_gemm)
      .Add("blas", blas)
      .Add("step_losses", step_losses);
  o.Add("step_compute_s", step_compute_s).Add("step_accumulation", step_accumulation);
  return o;
}

void TrainWindow::AddStep(double loss_sum, int64_t trips, double compute_s, double wait_s,
                          double wall_s, int64_t accumulation) {
  loss_ += loss_sum;
  trips_ += trips;
  compute_ += compute_s;
  wait_ += wait_s;
  wall_ += wall_s;
  ++steps_;
  step_losses_.push_back(trips > 0 ? loss_sum / trips : 0.0);
  step_compute_.push_back(compute_s);
  step_accumulation_.push_back(accumulation);
}

TrainReport TrainWindow::Take(int worker, int64_t step, int64_t epoch, double wall_s,
                              int64_t accumulation, int64_t adopted) {
  TrainReport r;
  r.worker = worker;
  r.step = step;
  r.epoch = epoch;
  r.wall_s = wall_s;
  r.loss = trips_ > 0 ? loss_ / trips_ : 0.0;
  r.trips = trips_;
  r.trips_per_s = wall_ > 0 ? trips_ / wall_ : 0.0;
  r.accumulation = accumulation;
  r.adopted = adopted;
  r.compute_s = PerStep(compute_);
  r.wait_s = PerStep(wait_);
  r.window_s = wall_;
  r.peak_rss_mb = PeakRssMb();
  const MemoryPeaks mem = PeakMemory();
  r.peak_private_mb = mem.private_mb;
  r.peak_shared_mb = mem.shared_mb;
  r.step_losses = std::move(step_losses_);
  r.step_compute_s = std::move(step_compute_);
  r.step_accumulation = std::move(step_accumulation_);
  r.noise_steps = static_cast<int64_t>(noise_.weight());
  r.noise = noise_.Mean();
  *this = TrainWindow{};
  return r;
}

}  // namespace tteps
