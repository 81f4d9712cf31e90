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
    for (const auto& [id, r] : workers_) e.Sample(m.get(r), Label("worker", std::to_string(id)));
  }
  bool stale = false;  // the parameter-server modes report staleness
  for (const auto& [id, r] : workers_) {
    for (const auto& [key, value] : r.exchange) {
      if (key != "staleness") continue;
      if (!stale) e.Metric("tteps_worker_staleness", "gauge", "Mean staleness of its pulls.");
      stale = true;
      e.Sample(value, Label("worker", std::to_string(id)));
    }
  }
  return e.str();
}

}  // namespace tteps::scheduler
