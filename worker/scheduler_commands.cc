#include "worker/scheduler_commands.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/bootstrap.h"
#include "worker/topics.h"

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

void SchedulerCommands::Listen(ControlChannel* control) {
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
  control->OnCommand(topics::kPause, [this](const topics::Pause& p) {
    if (p.paused) LOG(WARNING) << "training pauses: " << p.reason;
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = p.paused;
    Queue({Command(p.paused ? StepCommand::kPause : StepCommand::kResume), ""});
  });
  control->OnCommand(topics::kSetAccumulation, [this](const topics::SetAccumulation& s) {
    std::lock_guard<std::mutex> lock(mu_);
    accumulation_ = s.accumulation;
    Queue({Command(StepCommand::kSetAccumulation, -1, s.accumulation), ""});
  });
  control->OnCommand(topics::kAdoptSlice, [this](const topics::AdoptSlice& a) {
    std::lock_guard<std::mutex> lock(mu_);
    held_[a.slice] = a.schedule;
    Queue({Command(StepCommand::kAdopt, a.slice), a.schedule});
  });
  control->OnCommand(topics::kReleaseSlice, [this](const topics::ReleaseSlice& r) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(r.slice);
    Queue({Command(StepCommand::kRelease, r.slice), ""});
  });
  control->OnCommand(topics::kPeerLost, [this](const topics::PeerLost& l) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      lost_workers_.push_back(l.worker);
      lost_worker_count_ = lost_workers_.size();
    }
    NoteLostPeer();
  });
  control->OnCommand(topics::kServerLost, [this](const topics::ServerLost& l) {
    LOG(WARNING) << "server " << l.server << " was declared lost; its range is read from a replica";
    lost_servers_.Add(l.server);
    NoteLostPeer();
  });
  control->OnCommand(topics::kRollback, [this](const ClusterMap& next) {
    std::lock_guard<std::mutex> lock(mu_);
    rollback_ = next;
    rollback_pending_ = true;
    lost_servers_.Clear();  // ids of the old map; later losses are of the new one
    NoteLostPeer();
  });
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
  if (paused_) Queue({Command(StepCommand::kPause), ""});
  for (const auto& [slice, schedule] : held_) {
    Queue({Command(StepCommand::kAdopt, slice), schedule});
  }
}

std::vector<int> SchedulerCommands::LostWorkers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_workers_;
}

bool SchedulerCommands::TakeRollback(ClusterMap* map) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!rollback_pending_) return false;
  *map = std::move(rollback_);
  rollback_pending_ = false;
  return true;
}

}  // namespace tteps
