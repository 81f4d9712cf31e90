#include "scheduler/policy_link.h"

#include <glog/logging.h>

#include <algorithm>
#include <vector>

#include "common/json_writer.h"

namespace tteps::scheduler {
namespace {

ppo::WindowReport ToWindowReport(const TrainReport& t) {
  ppo::WindowReport r;
  r.worker = t.worker;
  r.step = t.step;
  r.alpha = std::max<int64_t>(1, t.accumulation);
  r.extra = std::max<int64_t>(0, t.adopted);
  r.trips = t.trips;
  r.window_s = t.window_s;
  r.compute_s = t.compute_s;
  r.wait_s = t.wait_s;
  r.staleness = t.Exchange("staleness");
  r.losses = t.step_losses;
  r.step_compute_s = t.step_compute_s;
  r.step_alpha = t.step_accumulation;
  r.noise_steps = t.noise_steps;
  r.noise = t.noise;
  r.step_s = r.losses.empty() ? 0 : r.window_s / r.losses.size();
  return r;
}

}  // namespace

void PolicyLink::Observe(const TrainReport& report, int slice) {
  if (!policy_) return;
  ppo::WindowReport window = ToWindowReport(report);
  window.worker = slice;
  policy_->Observe(window);
}

void PolicyLink::SetOrphaned(int slice, int64_t accumulation) {
  if (policy_) policy_->SetOrphaned(slice, accumulation);
}

void PolicyLink::SetOwned(int slice) {
  if (policy_) policy_->SetOwned(slice);
}

void PolicyLink::SendDecisions(const Membership& members, double wall_s, const Send& send) {
  if (!policy_) return;
  while (auto d = policy_->Poll()) {
    // A slice's decision goes to the worker whose own slice it is: its first worker, or the one
    // that joined for it. A lost worker's slice computed by another follows its schedule.
    const int owner = members.OwnerOf(d->worker);
    if (owner < 0 || members.OwnSliceOf(owner) != d->worker || members.IsLost(owner)) {
      LOG(INFO) << "decision for the slice of worker " << d->worker
                << " not sent: " << (owner < 0 ? "no such slice" : "its worker was lost");
      continue;
    }
    send(owner, d->new_alpha);
    ++decisions_;
    JsonObject line;
    line.Add("type", "decision")
        .Add("worker", d->worker)
        .Add("step", d->step)
        .Add("wall_s", wall_s)
        .Add("action", d->action)
        .Add("old_accumulation", d->old_alpha)
        .Add("new_accumulation", d->new_alpha)
        .Add("observation", std::vector<double>(d->observation.begin(), d->observation.end()));
    if (d->has_reward) line.Add("reward", d->reward);
    out_->AppendMetrics(line);
  }
}

void PolicyLink::Finish(const Membership& members, double wall_s, const Send& send) {
  if (!policy_ || finished_) return;
  finished_ = true;
  error_ = policy_->Finish();
  record_ = policy_->Record();
  SendDecisions(members, wall_s, send);  // record the last ones (done workers get nothing)
  if (!error_.empty()) LOG(ERROR) << error_;
}

}  // namespace tteps::scheduler
