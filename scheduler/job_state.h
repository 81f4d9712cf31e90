// What the coordinator's parts share (scheduler/coordinator.cc's loop, scheduler/failover.h,
// scheduler/joins.h): the job as launched, its nodes, the cluster map, the workers' progress,
// the membership and the one way a membership change reaches the nodes (the view).
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <zmq.hpp>

#include "common/clock.h"
#include "common/cluster_map.h"
#include "common/run_output.h"
#include "scheduler/coordinator_options.h"
#include "scheduler/job_phase.h"
#include "scheduler/membership.h"
#include "scheduler/membership_log.h"
#include "scheduler/node_table.h"
#include "scheduler/policy_link.h"
#include "scheduler/slice_schedules.h"
#include "scheduler/view_spread.h"
#include "scheduler/worker_book.h"

namespace tteps::scheduler {

struct JobState {
  JobState(zmq::socket_t& socket, CoordinatorOptions options, RunOutput* output,
           AccumulationPolicy* accumulation_policy);

  // The job's servers now: as launched until the maps are out, then the map's (a rollback
  // renumbers the live ones).
  int Servers() const {
    return map.servers.empty() ? opts.num_servers : static_cast<int>(map.servers.size());
  }
  // The step every live worker has reported.
  int64_t MinStep() const { return book.LiveMinStep(); }
  double WallSeconds() const { return SecondsSince(start); }
  // Tells the policy which slices lost or regained their own worker, sends the view to every
  // live node and the goes to joiners.
  void Apply(const MembershipChange& change);
  // The membership's view as the nodes get it: with the pause's reason and the schedules of
  // adopted slices.
  View WireView() const;
  // A worker's accumulation policy change took effect from step c.step (+ 1: the first drawn
  // with it): its slice's schedule records it (a metrics line says so); an implausible one is
  // ignored with an error.
  void AccumulationChanged(const NodeInfo& worker, const AccumulationChange& c);
  // The present view to every live worker and server (finished ones too: a lost server must
  // not hold them in MPI's finalize). Inside a ViewBatch it goes once, when the batch ends,
  // unless `now` (a command that must follow it is sent next) or it is a rollback's view
  // (which carries the new map).
  // Each node gets the changes from the view it was last sent, or the whole view where it holds
  // no view known to the scheduler (a joiner, a send ZeroMQ refused).
  void SendView(bool now = false);
  // The present view whole to `node` (it asked: changes came from a view it did not hold; or a
  // joiner that registered after the last view was sent).
  void SendWholeView(Node& node);
  // The views every live node has followed by now (a node moved on, or one behind was lost):
  // their "view_followed" lines.
  void RecordViewsFollowed();
  // Every registered node's first cluster map (its id, the servers' ranges, the resumed
  // schedules); heartbeats count from then.
  void SendFirstMaps();

  const CoordinatorOptions opts;  // as launched: never rewritten
  const JobMode mode;
  RunOutput* out;
  NodeTable nodes;
  ClusterMap map;
  WorkerBook book;  // what the workers reported
  Membership members;
  SliceSchedules schedules;  // each slice's accumulations
  PolicyLink policy;
  MembershipLog log;
  JobPhase phase;
  ViewSpread view_spread;  // how long each view takes to reach every node
  Clock::time_point start;
  // Clipping: version -> range group -> that range's squared norm (a replica's copy once).
  std::map<int64_t, std::map<int, double>> norm_parts;
  int64_t steps_done = 0;              // the most steps a finished worker reported
  int64_t min_steps_done = INT64_MAX;  // the fewest
  int64_t steps_redone = 0;            // the steps rollbacks abandoned (the furthest worker's)
  int64_t refused = 0;     // malformed messages, messages from unregistered peers, refused joins
  std::string pause_text;  // why training is paused, for workers that join meanwhile
  int view_batches = 0;    // ViewBatch scopes open
  bool view_held = false;  // a view to send when the last one closes
  // The views sent to every live node: how many times, and the last (the next one's changes
  // are from it).
  int64_t view_serial = 0;
  View sent_view;
};

// The membership changes of one pass of the scheduler (workers found silent together, the
// messages of one receive) reach the nodes as one view rather than one each: every node
// receives, follows and acknowledges each view, so a hundred workers lost (or joining) at once
// would otherwise cost a hundred views to every node.
class ViewBatch {
 public:
  explicit ViewBatch(JobState& job) : job_(job) { ++job_.view_batches; }
  ~ViewBatch();
  ViewBatch(const ViewBatch&) = delete;
  ViewBatch& operator=(const ViewBatch&) = delete;

 private:
  JobState& job_;
};

}  // namespace tteps::scheduler
