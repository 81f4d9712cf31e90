#include "scheduler/live_outputs.h"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tteps::scheduler {

LiveOutputs::LiveOutputs(RunOutput* out, bool per_worker)
    : out_(out), per_worker_(per_worker), metrics_(per_worker) {
  try {
    tensorboard_ = std::make_unique<EventFile>(out->Path("tb"));
  } catch (const std::exception& e) {
    LOG(ERROR) << e.what() << "; the job goes on without TensorBoard's events";
  }
}

void LiveOutputs::Train(const TrainReport& r) {
  if (!per_worker_) return;
  out_->AppendMetrics(r.ToJson());
  metrics_.Observe(r);
  if (!tensorboard_) return;
  const std::string worker = "worker_" + std::to_string(r.worker) + "/";
  tensorboard_->AddScalar(worker + "loss", r.step, r.loss);
  tensorboard_->AddScalar(worker + "trips_per_s", r.step, r.trips_per_s);
  tensorboard_->AddScalar(worker + "accumulation", r.step, static_cast<double>(r.accumulation));
  // The share of a step not spent computing: the exchange's and the waits'.
  const double steps = static_cast<double>(r.step_losses.size());
  if (r.window_s > 0 && steps > 0) {
    const double share = 1 - r.compute_s * steps / r.window_s;
    tensorboard_->AddScalar(worker + "communication_share", r.step, std::clamp(share, 0.0, 1.0));
  }
  for (const auto& [key, value] : r.exchange) {
    if (key == "staleness") tensorboard_->AddScalar(worker + "staleness", r.step, value);
  }
}

void LiveOutputs::JobStep(int64_t step, double loss, double trips_per_s, double wall_s,
                          const std::function<WorkerSpread()>& spread) {
  if (step <= job_step_) return;
  job_step_ = step;
  if (tensorboard_) {
    tensorboard_->AddScalar("train/loss", step, loss);
    tensorboard_->AddScalar("train/trips_per_s", step, trips_per_s);
  }
  if (!per_worker_) Spread(step, wall_s, spread());
}

void LiveOutputs::Spread(int64_t step, double wall_s, const WorkerSpread& s) {
  metrics_.SetSpread(s);
  const std::pair<const char*, double> stats[] = {{"loss_min", s.loss_min},
                                                  {"loss_median", s.loss_median},
                                                  {"loss_max", s.loss_max},
                                                  {"trips_per_s_min", s.speed_min},
                                                  {"trips_per_s_median", s.speed_median},
                                                  {"trips_per_s_max", s.speed_max}};
  JsonObject line;
  line.Add("type", "train_workers").Add("step", step).Add("wall_s", wall_s);
  line.Add("workers", s.workers);
  for (const auto& [name, value] : stats) line.Add(name, value);
  out_->AppendMetrics(line.Add("slowest_worker", s.slowest));
  if (!tensorboard_) return;
  for (const auto& [name, value] : stats) {
    tensorboard_->AddScalar(std::string("workers/") + name, step, value);
  }
}

void LiveOutputs::Eval(const EvalOutcome& r) {
  metrics_.SetEval(r.step, r.mape);
  if (!tensorboard_) return;
  for (const char* key : {"mape", "rmse", "mae"}) {
    const auto at = r.json.find(std::string("\"") + key + "\":");
    if (at == std::string::npos) continue;
    const double value = std::strtod(r.json.c_str() + at + std::strlen(key) + 3, nullptr);
    tensorboard_->AddScalar(std::string("eval/") + key, r.step, value);
  }
}

void LiveOutputs::Membership(int64_t step, const std::string& text) {
  if (tensorboard_) tensorboard_->AddText("membership", step, text);
}

void LiveOutputs::Publish(const std::function<JobGauges()>& gauges) {
  if (!publish_ || Clock::now() < next_publish_) return;
  next_publish_ = Clock::now() + std::chrono::milliseconds(500);
  metrics_.SetJob(gauges());
  publish_(metrics_.Text());
}

}  // namespace tteps::scheduler
