#include "scheduler/joins.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/codec.h"
#include "common/count_text.h"
#include "common/topics/server_topics.h"
#include "common/topics/worker_topics.h"

namespace tteps::scheduler {

std::string Joins::JoinRefusal(const NodeInfo& info, int* slice) const {
  if (info.role != Role::kWorker) {
    return std::string("a ") + RoleName(info.role) + " cannot join a running job";
  }
  if (std::string why = DataMismatch(info, {job_.opts.data_path, job_.opts.data_checksum});
      !why.empty()) {
    return why;
  }
  if (!job_.phase.is(Phase::kTraining)) {
    return std::string("the job is ") + PhaseName(job_.phase.get()) + ", not training";
  }
  return job_.members.JoinRefusal(slice);
}

void Joins::OnJoin(const Message& m) {
  NodeInfo info;
  std::string error;
  int slice = -1;
  try {
    DecodeBody(m.header.text, &info);
    error = JoinRefusal(info, &slice);
  } catch (const CodecError& e) {
    error = std::string("garbled registration: ") + e.what();
  }
  if (!error.empty()) {
    ++job_.refused;
    LOG(ERROR) << "a worker asked to join (" << info.host << ", pid " << info.pid
               << ") and was refused: " << error;
    job_.nodes.Shutdown(m.peer, "cannot join: " + error);
    return;
  }
  info.id = job_.members.Join(slice);
  // Its map is of the present view: the views sent before do not wait for it.
  job_.nodes.Add(info, m.peer).view = job_.members.view().number;
  ClusterMap map = job_.map;
  map.your_id = info.id;
  map.own_slice = slice;
  job_.nodes.SendMap(m.peer, map);
  LOG(WARNING) << "registered " << info.Name() << ", joining: it will compute the slice of worker "
               << slice
               << (job_.mode.lockstep()
                       ? " (now worker " + std::to_string(job_.members.OwnerOf(slice)) + "'s)"
                       : " (its place)");
}

int64_t Joins::PlaceStep(int place) const {
  // Whoever held the place last reported the furthest step: its first worker, or a joiner for it
  // that was lost in turn.
  int64_t step = 0;
  for (int holder : job_.members.HoldersOf(place)) step = std::max(step, job_.book.StepOf(holder));
  return step;
}

void Joins::RecordJoin(int worker, int slice, int from_worker, int64_t step,
                       const std::string& text) {
  JsonObject event;
  event.Add("event", "join").Add("worker", worker).Add("slice", slice);
  if (from_worker >= 0) event.Add("from_worker", from_worker);
  event.Add("step", step)
      .Add("wall_s", job_.WallSeconds())
      .Add("workers_live", job_.members.LiveCount())
      .Add("view", job_.members.view().number);
  job_.log.Record(event, text);
}

void Joins::OnJoinerReady(const Node& node) {
  const int slice = job_.members.OwnSliceOf(node.info.id);
  if (job_.mode.lockstep()) {
    // Loaded and built: the slice's adopter leaves it at its next step boundary.
    const int adopter = job_.members.OwnerOf(slice);
    const int64_t step = job_.book.LiveMaxStep();
    job_.Apply(job_.members.JoinerReady(node.info.id, step));
    JsonObject event;
    event.Add("event", "handover").Add("slice", slice).Add("from_worker", adopter);
    event.Add("to_worker", node.info.id).Add("step", step).Add("wall_s", job_.WallSeconds());
    event.Add("view", job_.members.view().number);
    job_.log.Record(event, node.info.Name() + " is ready: worker " + std::to_string(adopter) +
                               " leaves it slice " + std::to_string(slice) +
                               " at its next step boundary");
    return;
  }
  // Async / SSP: it starts where the lost worker last reported, and the servers count its
  // pushes for that place (SSP: its clock holds the others' pulls again) from the view on (a
  // push of it that reaches a server first is held until then).
  const int64_t start = PlaceStep(slice);
  job_.Apply(job_.members.JoinerReady(node.info.id, start));
  RecordJoin(node.info.id, slice, -1, start,
             node.info.Name() + " joined: it takes worker " + std::to_string(slice) +
                 "'s place from step " + std::to_string(start + 1));
}

void Joins::OnReleased(const Node& node, const topics::Released& released) {
  const int slice = released.slice;
  const int64_t step = released.step;
  MembershipChange change;
  try {
    change = job_.members.Released(node.info.id, slice, step);
  } catch (const std::invalid_argument& e) {
    LOG(ERROR) << e.what();
    return;
  }
  job_.Apply(change);
  if (change.owned.empty()) {
    JsonObject event;
    event.Add("event", "handback").Add("slice", slice).Add("worker", node.info.id);
    event.Add("step", step).Add("wall_s", job_.WallSeconds());
    event.Add("view", job_.members.view().number);
    job_.log.Record(event, "the worker joining for slice " + std::to_string(slice) + " is gone; " +
                               node.info.Name() + " computes it again");
    return;
  }
  const int joiner = job_.members.OwnerOf(slice);
  RecordJoin(joiner, slice, node.info.id, step,
             job_.nodes.WorkerName(joiner) + " joined: it computes the slice of worker " +
                 std::to_string(slice) + " from step " + std::to_string(step + 1) + " (worker " +
                 std::to_string(node.info.id) + " computed it before)");
}

std::string Joins::CheckMinWorkers() {
  const int want = job_.opts.config.cluster.min_workers;
  if (want <= 0 || !job_.phase.is(Phase::kTraining)) return "";
  Membership& members = job_.members;
  const std::string lost = job_.nodes.LostNames(Role::kWorker);
  const int live = members.LiveCount();
  const int64_t step = job_.book.LiveMaxStep();  // the furthest a live worker reported
  const double now_s = job_.WallSeconds(), paused_s = members.PausedFor(now_s);
  const int wait_s = static_cast<int>(job_.opts.config.cluster.timeout_s);
  JsonObject event;
  switch (members.CheckQuorum(want, step, now_s)) {
    case Membership::Quorum::kResumed:
      job_.SendView();
      event.Add("event", "resume").Add("step", step).Add("paused_s", paused_s);
      event.Add("wall_s", now_s).Add("workers_live", live).Add("view", members.view().number);
      job_.log.Record(event, CountOf(live, "worker") + " live again: training goes on after " +
                                 std::to_string(static_cast<int>(paused_s)) + " s of pause");
      return "";
    case Membership::Quorum::kPaused:
      job_.pause_text = CountOf(live, "worker") + " live, fewer than --min_workers " +
                        std::to_string(want) + ": training pauses; the job fails unless one " +
                        "joins within " + std::to_string(wait_s) +
                        " s (tteps-worker --scheduler ADDRESS); lost: " + lost;
      job_.SendView();
      event.Add("event", "pause").Add("step", step).Add("wall_s", now_s);
      event.Add("workers_live", live).Add("min_workers", want).Add("view", members.view().number);
      job_.log.Record(event, job_.pause_text);
      break;
    case Membership::Quorum::kUnchanged:
      break;
  }
  if (members.PausedFor(now_s) > job_.opts.config.cluster.timeout_s) {
    return "only " + std::to_string(live) + " of --min_workers " + std::to_string(want) +
           " workers live for " + std::to_string(wait_s) +
           " s (--timeout_s) and none joined; lost: " + lost;
  }
  return "";
}

}  // namespace tteps::scheduler
