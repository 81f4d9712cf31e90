#include "worker/scheduler_commands.h"

#include <glog/logging.h>

#include "common/bootstrap.h"
#include "worker/topics.h"

namespace tteps {

void SchedulerCommands::Listen(ControlChannel* control) {
  control->OnCommand(topics::kGo, [this](const Header& h) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      go_schedule_ = h.text;
    }
    go_step_ = h.step;
    go_ = true;
  });
  control->OnCommand(topics::kStop, [this](const Header&) { stop_ = true; });
  control->OnCommand(topics::kPause, [this](const Header& h) {
    if (h.samples != 0) LOG(WARNING) << "training pauses: " << h.text;
    paused_ = h.samples != 0;
  });
  control->OnCommand(topics::kSetAccumulation,
                     [this](const Header& h) { accumulation_ = h.samples; });
  control->OnCommand(topics::kPeerLost, [this](const Header& h) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      lost_workers_.push_back(static_cast<int>(h.step));
      lost_worker_count_ = lost_workers_.size();
    }
    NoteLostPeer();
  });
  control->OnCommand(topics::kServerLost, [this](const Header& h) {
    LOG(WARNING) << "server " << h.step << " was declared lost; its range is read from a replica";
    lost_servers_.Add(static_cast<int>(h.step));
    NoteLostPeer();
  });
  control->OnCommand(topics::kRollback, [this](const Header& h) {
    ClusterMap next;
    DecodeBody(h.text, &next);
    std::lock_guard<std::mutex> lock(mu_);
    rollback_ = std::move(next);
    rollback_pending_ = true;
    lost_servers_.Clear();  // ids of the old map; later losses are of the new one
    NoteLostPeer();
  });
  control->OnCommand(topics::kAdoptSlice, [this](const Header& h) {
    std::lock_guard<std::mutex> lock(mu_);
    holds_[static_cast<int>(h.step)] = true;
    schedules_[static_cast<int>(h.step)] = h.text;
    adopted_.push_back(static_cast<int>(h.step));
    adopted_given_ = adopted_.size();
  });
  control->OnCommand(topics::kReleaseSlice, [this](const Header& h) {
    std::lock_guard<std::mutex> lock(mu_);
    released_.push_back(static_cast<int>(h.step));
    holds_[static_cast<int>(h.step)] = false;
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
