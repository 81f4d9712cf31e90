#include "worker/scheduler_commands.h"

#include <glog/logging.h>

#include "common/bootstrap.h"
#include "worker/topics.h"

namespace tteps {

void SchedulerCommands::Listen(ControlChannel* control) {
  control->OnCommand(topics::kGo, [this](const topics::Go& go) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      go_schedule_ = go.schedule;
    }
    go_step_ = go.step;
    go_ = true;
  });
  control->OnCommand(topics::kStop, [this](const NoBody&) { stop_ = true; });
  control->OnCommand(topics::kPause, [this](const topics::Pause& p) {
    if (p.paused) LOG(WARNING) << "training pauses: " << p.reason;
    paused_ = p.paused;
  });
  control->OnCommand(topics::kSetAccumulation,
                     [this](const topics::SetAccumulation& s) { accumulation_ = s.accumulation; });
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
  control->OnCommand(topics::kAdoptSlice, [this](const topics::AdoptSlice& a) {
    std::lock_guard<std::mutex> lock(mu_);
    holds_[a.slice] = true;
    schedules_[a.slice] = a.schedule;
    adopted_.push_back(a.slice);
    adopted_given_ = adopted_.size();
  });
  control->OnCommand(topics::kReleaseSlice, [this](const topics::ReleaseSlice& r) {
    std::lock_guard<std::mutex> lock(mu_);
    released_.push_back(r.slice);
    holds_[r.slice] = false;
  });
}

std::vector<int> SchedulerCommands::LostWorkers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_workers_;
}

bool SchedulerCommands::AdoptionPending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return adopted_given_.load() > adopted_taken_;
}

std::vector<int> SchedulerCommands::TakeAdopted() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> fresh = std::move(replay_);
  replay_.clear();
  fresh.insert(fresh.end(), adopted_.begin() + static_cast<std::ptrdiff_t>(adopted_taken_),
               adopted_.end());
  adopted_taken_ = adopted_.size();
  return fresh;
}

std::string SchedulerCommands::ScheduleOf(int slice) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = schedules_.find(slice);
  return it == schedules_.end() ? std::string() : it->second;
}

std::vector<int> SchedulerCommands::TakeReleased() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> fresh(released_.begin() + static_cast<std::ptrdiff_t>(released_taken_),
                         released_.end());
  released_taken_ = released_.size();
  return fresh;
}

void SchedulerCommands::ReplayAdoptions() {
  std::lock_guard<std::mutex> lock(mu_);
  adopted_taken_ = adopted_.size();
  released_taken_ = released_.size();
  replay_.clear();
  for (const auto& [slice, held] : holds_) {
    if (held) replay_.push_back(slice);
  }
}

bool SchedulerCommands::TakeRollback(ClusterMap* map) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!rollback_pending_) return false;
  *map = std::move(rollback_);
  rollback_pending_ = false;
  return true;
}

}  // namespace tteps
