#include "scheduler/failover.h"

#include <glog/logging.h>

#include <algorithm>
#include <vector>

#include "common/bootstrap.h"
#include "common/cereal_body.h"
#include "common/count_text.h"
#include "common/topics/worker_topics.h"
#include "scheduler/placement.h"

namespace tteps::scheduler {
namespace {

std::string Seconds(double s) { return std::to_string(static_cast<int>(s)); }

}  // namespace

std::string Failover::CheckSilence() {
  // Silences are seconds long: a pass every 100 ms, not at each of the loop's receives (a
  // pass is O(nodes)).
  const auto now = Clock::now();
  if (now < next_silence_check_) return "";
  next_silence_check_ = now + std::chrono::milliseconds(100);
  ViewBatch batch(job_);  // the nodes found silent together: one view
  for (auto& n : job_.nodes.all()) {
    if (n.done) continue;
    const double silent = std::chrono::duration<double>(now - n.last_seen).count();
    if (silent <= job_.opts.config.cluster.silence_s) continue;
    if (CanLose(n)) {
      if (n.info.role == Role::kServer) {
        LoseServer(n, silent);
      } else {
        LoseWorker(n, silent);
      }
    } else if (CanRollback(n)) {
      if (std::string why = Rollback(n, silent); !why.empty()) return why;
    } else {
      return n.info.Name() + " has been silent for " + Seconds(silent) +
             " s (no heartbeat; --heartbeat_s)";
    }
  }
  return "";
}

bool Failover::CanLose(const Node& n) const {
  const JobPhase& phase = job_.phase;
  if (n.info.role == Role::kServer) {
    if (!phase.is(Phase::kReady) && !phase.is(Phase::kTraining) && !phase.is(Phase::kDraining)) {
      return false;
    }
    for (int r : ReplicasOf(job_.map, n.info.id)) {
      if (r != n.info.id && !job_.members.IsServerLost(r)) return true;  // a live replica
    }
    return false;
  }
  if (n.info.role != Role::kWorker || !phase.is(Phase::kTraining)) return false;
  // Sync and ring: an adopted slice is drawn on by its schedule (the accumulations its worker
  // reported). The ring goes on only over links it can rebuild (TCP).
  if (!job_.mode.WorkerLossRefusal().empty()) return false;
  // Never the last one: someone must finish the job (or has: a worker lost after the others
  // finished left nothing undone, its last slice being part of their last step).
  return job_.nodes.Count(Role::kWorker, /*live_only=*/true) > (n.lost ? 0 : 1);
}

MembershipChange Failover::DropWorker(Node& n) {
  n.done = true;
  n.lost = true;
  const MembershipChange change = job_.members.Lose(n.info.id, job_.book.StepOf(n.info.id));
  job_.book.Lose(n.info.id);
  job_.RecordViewsFollowed();  // views it had not followed wait for it no more
  job_.Apply(change);
  return change;
}

bool Failover::Release(Node& n, const topics::Leaving& leaving) {
  if (n.done || !CanLose(n)) return false;
  // Where it left, exactly (its last report may be steps behind): a joiner in its place (async,
  // SSP) goes on from the next step, so no step of the place is trained twice or skipped.
  const int64_t total = job_.opts.total_steps;
  if (leaving.steps > job_.book.StepOf(n.info.id) && (total <= 0 || leaving.steps <= total)) {
    job_.book.SetStep(n.info.id, leaving.steps);
  }
  const MembershipChange change = DropWorker(n);
  const int live = job_.members.ActiveCount();
  JsonObject event;
  event.Add("event", "release")
      .Add("worker", n.info.id)
      .Add("rank", n.info.mpi_rank)
      .Add("steps", leaving.steps)
      .Add("signal", leaving.signal)
      .Add("wall_s", job_.WallSeconds())
      .Add("workers_left", live)
      .Add("view", job_.members.view().number);
  if (job_.mode.slices()) {
    event.Add("slices_to", std::vector<int64_t>(change.adopters.begin(), change.adopters.end()));
  }
  job_.log.Record(event, n.info.Name() + " left the job (" + leaving.signal + ") after step " +
                             std::to_string(leaving.steps) + "; " + job_.mode.name() +
                             " goes on with " + CountOf(live, "worker"));
  NoteLostPeer();
  return true;
}

std::string Failover::AskToLeave(const std::string& what) {
  std::vector<const Node*> live;
  for (const Node& n : job_.nodes.all()) {
    if (n.info.role == Role::kWorker && !n.lost && !n.done && !job_.members.IsWaiting(n.info.id)) {
      live.push_back(&n);
    }
  }
  std::string error;
  std::vector<const Node*> targets = ReleaseTargets(what, live, &error);
  if (!job_.phase.is(Phase::kTraining)) {
    error = std::string("the job is ") + PhaseName(job_.phase.get()) + ", not training";
  } else if (!targets.empty() && !CanLose(*targets.front())) {
    // The mode's reason, or the last worker's.
    error = job_.mode.WorkerLossRefusal();
    if (error.empty())
      error = std::string(job_.mode.name()) + " mode cannot go on without a worker";
  }
  if (!error.empty()) {
    LOG(WARNING) << "release of " << what << " refused: " << error;
    return "refused: " + error;
  }
  std::string names;
  for (const Node* n : targets) {
    job_.nodes.Command(Role::kWorker, topics::kLeave, NoBody{}, n->info.id);
    names += (names.empty() ? "" : ", ") + n->info.Name();
  }
  LOG(INFO) << "release of " << what << ": " << names << " told to leave";
  return "released " + names + ": each leaves at its next step boundary";
}

void Failover::LoseWorker(Node& n, double silent_s) {
  const int id = n.info.id;
  const int64_t step = job_.book.StepOf(id);
  const MembershipChange change = DropWorker(n);
  const int live = job_.members.ActiveCount();
  JsonObject event;
  event.Add("event", "lost")
      .Add("worker", id)
      .Add("rank", n.info.mpi_rank)
      .Add("last_reported_step", step)
      .Add("silent_s", silent_s)
      .Add("wall_s", job_.WallSeconds())
      .Add("workers_left", live)
      .Add("view", job_.members.view().number);
  if (job_.mode.slices()) {
    event.Add("slices_to", std::vector<int64_t>(change.adopters.begin(), change.adopters.end()));
  }
  job_.log.Record(event,
                  n.info.Name() + " lost (silent " + Seconds(silent_s) + " s, last reported step " +
                      std::to_string(step) + "); " + job_.mode.name() + " goes on with " +
                      CountOf(live, "worker") +
                      (change.adopters.empty() ? ""
                                               : ", its slice computed by worker " +
                                                     std::to_string(change.adopters.front())));
  NoteLostPeer();
}

void Failover::LoseServer(Node& n, double silent_s) {
  n.done = true;
  n.lost = true;
  job_.RecordViewsFollowed();
  const int id = n.info.id;
  job_.members.LoseServer(id, job_.MinStep());
  int promoted = -1;  // the range's first live server: the one the workers now read
  for (int r : ReplicasOf(job_.map, id)) {
    if (!job_.members.IsServerLost(r)) {
      promoted = r;
      break;
    }
  }
  const std::string range = job_.map.ranges.at(id).ToString();
  JsonObject event;
  event.Add("event", "server lost")
      .Add("server", id)
      .Add("rank", n.info.mpi_rank)
      .Add("range", range)
      .Add("step", job_.MinStep())
      .Add("silent_s", silent_s)
      .Add("wall_s", job_.WallSeconds())
      .Add("servers_left", job_.nodes.Count(Role::kServer, /*live_only=*/true))
      .Add("served_by", promoted)
      .Add("view", job_.members.view().number);
  job_.log.Record(event, n.info.Name() + " lost (silent " + Seconds(silent_s) + " s, at step " +
                             std::to_string(job_.MinStep()) + "); server " +
                             std::to_string(promoted) + " serves " + range + " from its replica");
  job_.SendView();
  eval_->LoseServer(id);
  NoteLostPeer();
}

bool Failover::CanRollback(const Node& n) const {
  if (n.info.role != Role::kServer || !job_.phase.is(Phase::kTraining) ||
      job_.opts.config.output.checkpoint_every <= 0) {
    return false;
  }
  return job_.nodes.Count(Role::kServer, /*live_only=*/true) > (n.lost ? 0 : 1);
}

int Failover::RenumberServers(const ResumePoint& point) {
  // The live servers, renumbered in their old order; the keys cut anew over them.
  std::vector<Node*> live;
  for (auto& o : job_.nodes.all()) {
    if (o.info.role == Role::kServer && !o.lost) live.push_back(&o);
  }
  std::sort(live.begin(), live.end(),
            [](const Node* a, const Node* b) { return a->info.id < b->info.id; });
  const int servers = static_cast<int>(live.size());
  ClusterMap& map = job_.map;
  // The job's options stay as launched: the map holds what changed (servers, replicas).
  if (servers % map.config.cluster.replicas != 0) map.config.cluster.replicas = 1;
  map.servers.clear();
  for (int s = 0; s < servers; ++s) {
    live[s]->info.id = s;
    map.servers.push_back(live[s]->info);
  }
  map.ranges = ServerRanges(job_.opts.param_count, servers, map.config.cluster.replicas, {},
                            job_.opts.light_keys);
  ++map.epoch;
  map.resume_version = point.version;
  map.start_steps = point.clocks;
  map.schedules = job_.schedules.Encoded();
  map.data_checksum = job_.opts.data_checksum;
  map.resume_sources.assign(point.sources.begin(), point.sources.end());
  return servers;
}

std::string Failover::Rollback(Node& n, double silent_s) {
  const std::string& dir = job_.opts.config.output.checkpoint_dir;
  const int lost_id = n.info.id;
  ResumePoint point;
  try {
    point = ChooseRollbackPoint(dir, job_.opts.param_count);
  } catch (const std::exception& e) {
    return n.info.Name() + " has been silent for " + Seconds(silent_s) +
           " s and holds keys no other server has; no checkpoint to roll back to: " + e.what();
  }
  n.done = true;
  n.lost = true;
  job_.RecordViewsFollowed();
  // The steps after the checkpoint are abandoned: their checkpoints go (a later rollback must
  // not mix them with the new ranges').
  RemoveCheckpointsAfter(dir, point.version);
  const int64_t reached = job_.book.MaxStep();
  const int servers = RenumberServers(point);
  job_.norm_parts.clear();
  for (size_t w = 0; w < point.clocks.size(); ++w) job_.book.SetStep(w, point.clocks[w]);
  job_.steps_done = 0;
  job_.min_steps_done = INT64_MAX;
  for (auto& o : job_.nodes.all()) {
    if (o.info.role == Role::kWorker && !o.lost) o.done = false;  // they train again
  }
  job_.members.Rollback(RemapOf(job_.map), point.version);
  job_.steps_redone += reached - point.version;
  JsonObject event;
  event.Add("event", "rollback")
      .Add("server", lost_id)
      .Add("rank", n.info.mpi_rank)
      .Add("step", reached)
      .Add("to_version", point.version)
      .Add("silent_s", silent_s)
      .Add("wall_s", job_.WallSeconds())
      .Add("servers_left", servers)
      .Add("epoch", static_cast<int64_t>(job_.map.epoch))
      .Add("view", job_.members.view().number);
  job_.log.Record(event, n.info.Name() + " lost (silent " + Seconds(silent_s) +
                             " s) and no other server holds its keys: the job rolls back from "
                             "step " +
                             std::to_string(reached) + " to the checkpoint of version " +
                             std::to_string(point.version) + " and goes on with " +
                             std::to_string(servers) + " server" + (servers > 1 ? "s" : ""));
  for (size_t s = 0; s < job_.map.servers.size(); ++s) {
    LOG(INFO) << job_.map.servers[s].Name() << " holds " << job_.map.ranges[s].ToString()
              << " (epoch " << job_.map.epoch << ")";
  }
  job_.SendView();  // the new map's, which every node takes from it: no server lost yet
  eval_->Remap(job_.map);
  NoteLostPeer();
  return "";
}

}  // namespace tteps::scheduler
