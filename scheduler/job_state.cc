#include "scheduler/job_state.h"

#include <utility>

#include "worker/topics.h"

namespace tteps::scheduler {

JobState::JobState(zmq::socket_t& socket, CoordinatorOptions options, RunOutput* output,
                   AccumulationPolicy* accumulation_policy)
    : opts(std::move(options)),
      mode(opts.config.exchange.mode),
      out(output),
      nodes(socket),
      members(mode, opts.num_workers),
      schedules(opts.num_workers, opts.config.exchange.accumulation, opts.config.output),
      policy(accumulation_policy, output),
      log(output) {}

void JobState::Apply(const MembershipChange& change) {
  for (int slice : change.orphaned) policy.SetOrphaned(slice, schedules.LastAccumulationOf(slice));
  for (int slice : change.owned) policy.SetOwned(slice);
  SendView();
  for (const JoinerGo& go : change.goes) {
    // With the slice's schedule: the joiner draws what its lost worker would have.
    nodes.Command(Role::kWorker, topics::kGo, {go.step, schedules.Text(go.slice)}, go.worker);
    // And the view in force, should it have registered after the last one (a pause).
    nodes.Command(Role::kWorker, kView, WireView(), go.worker);
  }
}

View JobState::WireView() const {
  View v = members.view();
  if (v.paused) v.pause_reason = pause_text;
  for (size_t s = 0; s < v.slice_owner.size(); ++s) {
    const int slice = static_cast<int>(s);
    if (members.OwnSliceOf(v.slice_owner[s]) != slice) v.schedules[slice] = schedules.Text(slice);
  }
  return v;
}

void JobState::SendView() {
  const View v = WireView();
  for (const auto& n : nodes.all()) {
    if (n.lost || (n.info.role != Role::kWorker && n.info.role != Role::kServer)) continue;
    nodes.CommandTo(n.peer, kView, v);
  }
}

}  // namespace tteps::scheduler
