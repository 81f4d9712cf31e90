#include "worker/train_window.h"

#include "common/peak_memory.h"

namespace tteps {

void TrainWindow::AddStep(double loss_sum, int64_t step_trips, double compute_s, double wait_s,
                          double wall_s) {
  loss += loss_sum;
  trips += step_trips;
  compute += compute_s;
  wait += wait_s;
  wall += wall_s;
  ++steps;
  step_losses.push_back(step_trips > 0 ? loss_sum / step_trips : 0.0);
}

JsonObject TrainWindow::Json(int worker, int64_t step, int64_t epoch, double wall_s,
                             int64_t alpha) const {
  JsonObject o;
  o.Add("type", "train")
      .Add("worker", worker)
      .Add("step", step)
      .Add("epoch", epoch)
      .Add("wall_s", wall_s)
      .Add("loss", trips > 0 ? loss / trips : 0.0)
      .Add("trips", trips)
      .Add("trips_per_s", wall > 0 ? trips / wall : 0.0)
      .Add("alpha", alpha)
      .Add("compute_s", PerStep(compute))
      .Add("wait_s", PerStep(wait))
      .Add("window_s", wall)
      .Add("peak_rss_mb", PeakRssMb())
      .Add("step_losses", step_losses);
  return o;
}

std::string TrainStartJson(int worker) {
  return JsonObject().Add("type", "start").Add("worker", worker).str();
}

}  // namespace tteps
