// What the scheduler tells a worker while it trains, written by the control channel's thread
// and read by the training thread: go, stop (the time budget), pause, its accumulation, lost
// workers' slices to adopt (and adopted slices to leave to a joining worker), lost servers and a
// rollback's cluster map.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/cluster_map.h"
#include "common/control_channel.h"
#include "common/lost_servers.h"

namespace tteps {

class SchedulerCommands {
 public:
  // Registers the handlers; call before control->Start().
  void Listen(ControlChannel* control);

  bool go() const { return go_.load(); }
  int64_t go_step() const { return go_step_.load(); }  // a joining worker's first step
  // A joining worker's slice's schedule (SliceSchedule::Encode) as the go carried it; empty if
  // it carried none.
  std::string go_schedule() const {
    std::lock_guard<std::mutex> lock(mu_);
    return go_schedule_;
  }
  bool stop() const { return stop_.load(); }
  // --min_workers: too few workers live; training waits until one joins.
  bool paused() const { return paused_.load(); }
  int64_t accumulation() const { return accumulation_.load(); }  // 0: not set
  const LostServers& lost_servers() const { return lost_servers_; }
  // Workers declared lost, in the order the scheduler declared them (the same on every worker).
  std::vector<int> LostWorkers() const;
  size_t lost_worker_count() const { return lost_worker_count_.load(); }

  // Sync: lost workers' slices given to this worker and not taken yet.
  bool AdoptionPending() const;
  std::vector<int> TakeAdopted();
  // The schedule of the accumulation of a slice given to this worker, as the scheduler sent it
  // (SliceSchedule::Encode); empty if it sent none.
  std::string ScheduleOf(int slice) const;
  // Adopted slices a joining worker takes over, not taken yet. The driver takes adoptions
  // before releases at each step, the order the scheduler sends them in.
  std::vector<int> TakeReleased();
  // A restarted driver (a rollback) takes every slice this worker holds again: adopted and not
  // released since.
  void ReplayAdoptions();

  bool rollback_pending() const { return rollback_pending_.load(); }
  // The rollback's map, if one came (and forgets it).
  bool TakeRollback(ClusterMap* map);

 private:
  std::atomic<bool> go_{false}, stop_{false}, paused_{false};
  std::atomic<int64_t> go_step_{-1}, accumulation_{0};
  mutable std::mutex mu_;
  std::string go_schedule_;
  std::vector<int> adopted_;  // in the order given
  size_t adopted_taken_ = 0;
  std::atomic<size_t> adopted_given_{0};
  std::vector<int> released_;  // in the order given
  size_t released_taken_ = 0;
  std::map<int, bool> holds_;             // slice -> adopted (true) or released (false) last
  std::map<int, std::string> schedules_;  // slice -> its accumulation schedule, encoded
  std::vector<int> replay_;   // ReplayAdoptions: the slices held, given by TakeAdopted next
  LostServers lost_servers_;  // --replicas: servers declared lost
  std::vector<int> lost_workers_;
  std::atomic<size_t> lost_worker_count_{0};
  std::atomic<bool> rollback_pending_{false};
  ClusterMap rollback_;
};

}  // namespace tteps
