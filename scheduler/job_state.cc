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
  for (const MembershipCommand& c : change.commands) {
    switch (c.kind) {
      case MembershipCommand::kAdopt:
        nodes.Command(Role::kWorker, topics::kAdoptSlice, {c.slice, schedules.Text(c.slice)},
                      c.worker);
        break;
      case MembershipCommand::kRelease:
        nodes.Command(Role::kWorker, topics::kReleaseSlice, {c.slice}, c.worker);
        break;
      case MembershipCommand::kGo:
        // With the slice's schedule: the joiner draws what its lost worker would have.
        nodes.Command(Role::kWorker, topics::kGo, {c.step, schedules.Text(c.slice)}, c.worker);
        PauseIfShort(c.worker, c.step);
        break;
    }
  }
}

void JobState::PauseIfShort(int worker, int64_t step) {
  // Still too few with it: it waits with the others (the resume goes to every worker).
  if (members.paused()) {
    nodes.Command(Role::kWorker, topics::kPause, {true, step, pause_text}, worker);
  }
}

}  // namespace tteps::scheduler
