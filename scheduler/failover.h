// Silent nodes while a job runs. A silent worker while others train is dropped, not fatal: the
// servers refuse its pushes and it is told to stop if it ever speaks again. Async / SSP: the
// servers stop waiting for its clock. Sync and ring: its slices go to the live workers computing
// the fewest (scheduler/membership.h), so every step still sums the same trips. --replicas: a
// silent server is dropped when another live server holds its range; the workers (and the
// evaluation) read that range from the replica from then on. A silent server whose range has no
// live replica, with checkpoints on and another server alive: the job rolls back to the newest
// complete checkpoint on the live servers (ranges cut anew, servers renumbered, epoch + 1) and
// the workers train the abandoned steps again. Anything else fails the job.
#pragma once

#include <string>

#include "common/checkpoint_files.h"
#include "common/clock.h"
#include "common/topics/worker_topics.h"
#include "scheduler/evaluation.h"
#include "scheduler/job_state.h"
#include "scheduler/release_requests.h"

namespace tteps::scheduler {

class Failover {
 public:
  Failover(JobState& job, Evaluation* eval) : job_(job), eval_(eval) {}
  // Handles every node silent for longer than --silence_s; returns why the job fails (empty:
  // it goes on).
  std::string CheckSilence();
  // A worker leaves the job (a signal to it) after the steps it says: what it computed goes to
  // the others at once, as after a loss but without the silence. False if the job cannot go on
  // without it (nothing changed then).
  bool Release(Node& n, const topics::Leaving& leaving);
  // launch/tteps --release WHAT (a worker id or a host, scheduler/release_requests.h): tells the
  // workers it names to leave at their next step boundary, where the job can go on without
  // them. Returns the answer: "released ..." or "refused: ...".
  std::string AskToLeave(const std::string& what);

 private:
  bool CanLose(const Node& n) const;
  void LoseWorker(Node& n, double silent_s);
  // Declares worker `n` lost (a silence, or its release) in the membership; returns the change.
  MembershipChange DropWorker(Node& n);
  void LoseServer(Node& n, double silent_s);
  bool CanRollback(const Node& n) const;
  // Returns why it cannot (empty: rolled back).
  std::string Rollback(Node& n, double silent_s);
  // Rollback's part: the live servers renumbered in their old order, the keys cut anew over
  // them and the map's next epoch from `point` (returns how many servers). The rollback's view
  // carries the new map to every live node.
  int RenumberServers(const ResumePoint& point);

  JobState& job_;
  Evaluation* eval_;
  Clock::time_point next_silence_check_{};  // a pass over every node, ten times a second
};

}  // namespace tteps::scheduler
