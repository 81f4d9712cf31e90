#include "worker/scheduler_commands.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/bootstrap.h"
#include "common/topics/worker_topics.h"

namespace tteps {
namespace {

StepCommand Command(StepCommand::Kind kind, int slice = -1, int64_t accumulation = 0) {
  StepCommand c;
  c.kind = kind;
  c.slice = slice;
  c.accumulation = accumulation;
  return c;
}

}  // namespace

void SchedulerCommands::Listen(ControlChannel* control, const ClusterMap& map) {
  const int me = map.your_id;
  follower_ = ViewFollower(me, map.own_slice >= 0 ? map.own_slice : me, map.epoch);
  control->OnCommand(topics::kGo, [this](const topics::Go& go) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      go_schedule_ = go.schedule;
    }
    go_step_ = go.step;
    go_ = true;
  });
  // The handlers below run under the channel's lock, which mu_ nests in.
  control->OnCommand(topics::kStop, [this](const NoBody&) {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    Queue({Command(StepCommand::kStop), ""});
  });
  control->OnCommand(topics::kLeave, [this](const NoBody&) { leave_ = true; });
  control->OnCommand(topics::kSetAccumulation, [this](const topics::SetAccumulation& s) {
    std::lock_guard<std::mutex> lock(mu_);
    accumulation_ = s.accumulation;
    Queue({Command(StepCommand::kSetAccumulation, -1, s.accumulation), ""});
  });
  control->OnView([this, control](const View& view) {
    Follow(view);
    control->NoteViewFollowed(view.number);
  });
}

void SchedulerCommands::Follow(const View& view) {
  bool lost_peer = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const ViewChanges changes = follower_.Follow(view);
    if (changes.empty()) return;
    lost_worker_count_ = follower_.last().lost_workers.size();
    if (changes.remap) {
      // The step loop ends wherever it is and trains again on the new servers.
      rollback_ = *changes.remap;
      rollback_pending_ = true;
      lost_servers_.Clear();  // ids of the old map; later losses are of the new one
      lost_peer = true;
    }
    for (int s : changes.lost_servers) {
      LOG(WARNING) << "server " << s << " was declared lost; its range is read from a replica";
      lost_servers_.Add(s);
    }
    lost_peer = lost_peer || !changes.lost_workers.empty() || !changes.lost_servers.empty();
    if (changes.pause != ViewChanges::Pause::kUnchanged) {
      if (view.paused) LOG(WARNING) << "training pauses: " << view.pause_reason;
      Queue({Command(view.paused ? StepCommand::kPause : StepCommand::kResume), ""});
    }
    // Adoptions first: a slice adopted and handed over in one view is computed at most for the
    // step it arrives in (the release takes effect at the next boundary, and says so).
    for (const auto& [slice, schedule] : changes.adopt) {
      Queue({Command(StepCommand::kAdopt, slice), schedule});
    }
    for (int slice : changes.release) Queue({Command(StepCommand::kRelease, slice), ""});
  }
  if (lost_peer) NoteLostPeer();
}

void SchedulerCommands::Queue(Queued q) { queue_.push_back(std::move(q)); }

std::vector<StepCommand> SchedulerCommands::TakeStepCommands(const ScheduleDecoder& decode) {
  std::deque<Queued> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.swap(queue_);
  }
  std::vector<StepCommand> out;
  for (Queued& q : taken) {
    if (q.command.kind == StepCommand::kAdopt && !q.schedule.empty()) {
      q.command.schedule = decode(q.command.slice, q.schedule);
    }
    out.push_back(std::move(q.command));
  }
  return out;
}

bool SchedulerCommands::StepCommandQueued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !queue_.empty();
}

bool SchedulerCommands::Interrupting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(queue_.begin(), queue_.end(), [](const Queued& q) {
    return q.command.kind == StepCommand::kAdopt || q.command.kind == StepCommand::kPause;
  });
}

void SchedulerCommands::RestartQueue() {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  if (stop_) Queue({Command(StepCommand::kStop), ""});
  if (accumulation_ > 0) Queue({Command(StepCommand::kSetAccumulation, -1, accumulation_), ""});
  const View& view = follower_.last();
  if (view.paused) Queue({Command(StepCommand::kPause), ""});
  for (int slice : follower_.held()) {
    const auto schedule = view.schedules.find(slice);
    Queue({Command(StepCommand::kAdopt, slice),
           schedule == view.schedules.end() ? std::string() : schedule->second});
  }
}

std::vector<int> SchedulerCommands::LostWorkers() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto& lost = follower_.last().lost_workers;
  return std::vector<int>(lost.begin(), lost.end());
}

bool SchedulerCommands::TakeRollback(ClusterMap* map) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!rollback_pending_) return false;
  *map = Remapped(std::move(*map), rollback_);
  rollback_pending_ = false;
  return true;
}

}  // namespace tteps
