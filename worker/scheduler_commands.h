// What the scheduler tells a worker, written by the control channel's thread. Every membership
// change comes as a view (common/view.h), followed in one place: what it changes for the step
// loop (adopt, release, pause, resume) goes into one queue (worker/step_commands.h) with the
// stop and the policy's accumulations, which the loop drains; the rest is state other parts
// read: the go (the start barrier), the lost workers (the ring, the first live worker's
// snapshots), the lost servers (the KV client, while it waits) and a rollback's new servers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/cluster_map.h"
#include "common/control_channel.h"
#include "common/lost_servers.h"
#include "common/view.h"
#include "worker/step_commands.h"

namespace tteps {

class SchedulerCommands {
 public:
  // Decodes a slice's schedule as the scheduler sent it (SliceSchedule::Encode); throws naming
  // the slice.
  using ScheduleDecoder = std::function<SliceSchedule(int slice, const std::string& encoded)>;

  // Registers the handlers; call before control->Start(). `map`: the cluster map this worker
  // registered with (its id, its own slice: a joiner's is the lost worker's it joined for, its
  // epoch).
  void Listen(ControlChannel* control, const ClusterMap& map);

  bool go() const { return go_.load(); }
  // The scheduler asked this worker to leave the job (launch/tteps --release).
  bool leave_requested() const { return leave_.load(); }
  int64_t go_step() const { return go_step_.load(); }  // a joining worker's first step
  // A joining worker's slice's schedule (SliceSchedule::Encode) as the go carried it; empty if
  // it carried none.
  std::string go_schedule() const {
    std::lock_guard<std::mutex> lock(mu_);
    return go_schedule_;
  }

  // --- the step loop's queue ------------------------------------------------------------------
  // The commands since the last call, in order (an adoption's schedule decoded by `decode`).
  std::vector<StepCommand> TakeStepCommands(const ScheduleDecoder& decode);
  bool StepCommandQueued() const;
  // Whether a queued command must cut an exchange's wait short: a slice to adopt (sync: the
  // wait may be for it) or a pause.
  bool Interrupting() const;
  // A rollback restarts the step loop: the queue holds again what the new loop must know (the
  // stop, the policy's accumulation, a pause in force, the adopted slices not released since),
  // and nothing it would apply twice.
  void RestartQueue();

  // --- state ------------------------------------------------------------------------------
  const LostServers& lost_servers() const { return lost_servers_; }
  // Workers declared lost, in the order the scheduler declared them (the same on every worker).
  std::vector<int> LostWorkers() const;
  size_t lost_worker_count() const { return lost_worker_count_.load(); }
  bool rollback_pending() const { return rollback_pending_.load(); }
  // A rollback's view came: `map` becomes the new map (and the rollback is forgotten).
  bool TakeRollback(ClusterMap* map);

 private:
  struct Queued {
    StepCommand command;
    std::string schedule;  // kAdopt: as sent (decoded when taken)
  };
  void Queue(Queued q);  // under mu_
  void Follow(const View& view);

  std::atomic<bool> go_{false};
  std::atomic<bool> leave_{false};
  std::atomic<int64_t> go_step_{-1};
  mutable std::mutex mu_;
  std::string go_schedule_;
  std::deque<Queued> queue_;
  // What a restarted loop is told again: the stop, the last accumulation, and from the last
  // view followed, a pause in force and every slice held (adopted, not released since).
  bool stop_ = false;
  int64_t accumulation_ = 0;
  ViewFollower follower_;     // the last view: lost workers, pause, held slices and their schedules
  LostServers lost_servers_;  // --replicas: servers declared lost (read by the KV clients)
  std::atomic<size_t> lost_worker_count_{0};
  std::atomic<bool> rollback_pending_{false};
  ServerRemap rollback_;
};

}  // namespace tteps
