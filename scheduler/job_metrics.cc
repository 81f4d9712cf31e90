#include "scheduler/job_metrics.h"

#include <sstream>

namespace tteps::scheduler {
namespace {

class Exposition {
 public:
  // A metric's HELP and TYPE lines, once, before its first sample.
  Exposition& Metric(const std::string& name, const std::string& type, const std::string& help) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    name_ = name;
    return *this;
  }
  Exposition& Sample(double value, const std::string& labels = "") {
    out_ << name_ << (labels.empty() ? "" : "{" + labels + "}") << " " << value << "\n";
    return *this;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::string name_;
};

std::string Label(const std::string& key, const std::string& value) {
  return key + "=\"" + value + "\"";  // values here are modes, phases and numbers: no escaping
}

// Each worker's last report, a sample per worker.
void PerWorkerGauges(const std::map<int, TrainReport>& workers, Exposition* out) {
  Exposition& e = *out;
  struct PerWorker {
    const char* name;
    const char* help;
    double (*get)(const TrainReport&);
  };
  static const PerWorker kPerWorker[] = {
      {"tteps_worker_step", "The worker's last reported step.",
       [](const TrainReport& r) { return static_cast<double>(r.step); }},
      {"tteps_worker_trips_per_second", "The worker's trips per second in its last window.",
       [](const TrainReport& r) { return r.trips_per_s; }},
      {"tteps_worker_compute_seconds", "The worker's compute per step in its last window.",
       [](const TrainReport& r) { return r.compute_s; }},
      {"tteps_worker_wait_seconds", "The worker's wait per step in its last window.",
       [](const TrainReport& r) { return r.wait_s; }},
      {"tteps_worker_accumulation", "The worker's micro-batches per step.",
       [](const TrainReport& r) { return static_cast<double>(r.accumulation); }},
  };
  for (const PerWorker& m : kPerWorker) {
    e.Metric(m.name, "gauge", m.help);
    for (const auto& [id, r] : workers) e.Sample(m.get(r), Label("worker", std::to_string(id)));
  }
  bool stale = false;  // the parameter-server modes report staleness
  for (const auto& [id, r] : workers) {
    for (const auto& [key, value] : r.exchange) {
      if (key != "staleness") continue;
      if (!stale) e.Metric("tteps_worker_staleness", "gauge", "Mean staleness of its pulls.");
      stale = true;
      e.Sample(value, Label("worker", std::to_string(id)));
    }
  }
}

// How the live workers spread (jobs beyond --worker_series): three samples a metric.
void SpreadGauges(const WorkerSpread& s, Exposition* out) {
  Exposition& e = *out;
  e.Metric("tteps_workers_reporting", "gauge", "Live workers in the spread below.")
      .Sample(s.workers);
  e.Metric("tteps_workers_loss", "gauge", "The live workers' train loss of their last windows.")
      .Sample(s.loss_min, Label("stat", "min"))
      .Sample(s.loss_median, Label("stat", "median"))
      .Sample(s.loss_max, Label("stat", "max"));
  e.Metric("tteps_workers_trips_per_second", "gauge",
           "The live workers' trips per second in their last windows.")
      .Sample(s.speed_min, Label("stat", "min"))
      .Sample(s.speed_median, Label("stat", "median"))
      .Sample(s.speed_max, Label("stat", "max"));
  e.Metric("tteps_slowest_worker", "gauge", "The live worker of the lowest trips per second.")
      .Sample(s.slowest);
}

}  // namespace

void JobMetrics::SetEval(int64_t step, double mape) {
  evaluated_ = true;
  eval_step_ = step;
  mape_ = mape;
}

std::string JobMetrics::Text() const {
  Exposition e;
  const std::string mode = Label("mode", job_.mode);
  e.Metric("tteps_job_phase", "gauge", "1 for the phase the job is in.")
      .Sample(1, mode + "," + Label("phase", job_.phase));
  e.Metric("tteps_step", "gauge", "The step every live worker has completed.").Sample(job_.step);
  e.Metric("tteps_planned_steps", "gauge", "The steps the job plans.").Sample(job_.planned_steps);
  e.Metric("tteps_trips_per_second", "gauge", "Trips trained per second, summed over workers.")
      .Sample(job_.trips_per_s);
  e.Metric("tteps_train_loss", "gauge", "Mean train loss of the workers' last windows.")
      .Sample(job_.loss);
  e.Metric("tteps_train_seconds", "counter", "Seconds of training (pauses left out).")
      .Sample(job_.train_s);
  e.Metric("tteps_workers", "gauge", "Workers by state.")
      .Sample(job_.workers_live, Label("state", "live"))
      .Sample(job_.workers_lost, Label("state", "lost"));
  e.Metric("tteps_membership_events_total", "counter",
           "Membership events (losses, joins, releases, pauses, rollbacks).")
      .Sample(static_cast<double>(job_.membership_events));
  e.Metric("tteps_refused_messages_total", "counter",
           "Messages the scheduler refused (malformed, unregistered, refused joins).")
      .Sample(static_cast<double>(job_.refused_messages));
  if (evaluated_) {
    e.Metric("tteps_eval_step", "gauge", "The step of the last evaluation.").Sample(eval_step_);
    e.Metric("tteps_eval_mape", "gauge", "Mean absolute percentage error of the last evaluation.")
        .Sample(mape_);
  }
  if (per_worker_) {
    PerWorkerGauges(workers_, &e);
  } else if (spread_.workers > 0) {
    SpreadGauges(spread_, &e);
  }
  return e.str();
}

}  // namespace tteps::scheduler
