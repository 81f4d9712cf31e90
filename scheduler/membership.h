// The job's membership as a pure state machine: who is in it, who computes which
// slice of the global batch (sync, ring) or holds which place (async, SSP), and who joins for
// what. Events come in (a loss, a join, a joiner ready, a slice released, a worker finished, a
// server lost, a rollback, too few workers); out comes the next view (common/view.h), which
// every node follows, and the goes for joiners. No sockets, threads or clocks: the coordinator
// sends the views and the goes and records the views, and every sequence the failure tests
// produce by killing processes is a unit test here (tests/unit/scheduler/membership_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/view.h"
#include "scheduler/job_mode.h"

namespace tteps::scheduler {

// A joiner told to go: it computes `slice` (sync) or holds place `slice` (async, SSP) from the
// step after `step`.
struct JoinerGo {
  int worker;
  int slice;
  int64_t step = 0;
  bool operator==(const JoinerGo& o) const {
    return worker == o.worker && slice == o.slice && step == o.step;
  }
};

// What an event changed beyond the view (which every node follows, common/view.h).
struct MembershipChange {
  std::vector<JoinerGo> goes;
  // Sync and ring, a loss: who adopted each of the lost worker's slices, in slice order.
  std::vector<int> adopters;
  // Slices or places left without their own worker (a policy holds their accumulation), or
  // given one again.
  std::vector<int> orphaned, owned;
};

class Membership {
 public:
  // Workers 0 .. workers - 1, each computing its own slice (or holding its own place). Sync with
  // `slices` > workers (--slices): the slices past the workers are computed as adopted ones,
  // each by the worker computing the fewest (the first of them), from view 1 on ("slices").
  // 0: one per worker.
  Membership(JobMode mode, int workers, int slices = 0);

  // --- events -----------------------------------------------------------------------------
  // A worker finished its steps: it adopts nothing from then on.
  void Finish(int worker);
  // A worker declared lost at step `step`. Sync and ring: each slice it computed goes to the
  // live, unfinished worker computing the fewest (the first of them in registration order; not
  // a joiner still waiting for its go, which has no step to start it from); a joiner already
  // waiting for such a slice stays in the view's handover, so the new adopter leaves it at once.
  // Async and SSP: its place is empty until a worker joins for it.
  MembershipChange Lose(int worker, int64_t step);
  // A worker asks to join: the slice (sync) or place (async, SSP) it would take, or why it
  // cannot (the coordinator checks first that the job is training).
  std::string JoinRefusal(int* slice) const;
  // Registers a joiner for `slice` (JoinRefusal's); returns its id, past every worker so far.
  int Join(int slice);
  // The joiner loaded its data and built its model. Sync: the view hands its slice over (its
  // adopter leaves it at its next step boundary), from `step` (the furthest step reported).
  // Async and SSP: it takes its place from `step` (its place's last reported step), a new view.
  MembershipChange JoinerReady(int joiner, int64_t step);
  // Sync: `worker` left `slice` after step `step`. The joiner waiting for it computes it from
  // there (a new view); if that joiner was lost meanwhile, the slice goes back to `worker`
  // (a view too: it computes the slice again). Throws std::invalid_argument unless `worker`
  // computes `slice` as an adopted one.
  MembershipChange Released(int worker, int slice, int64_t step);
  // --replicas: a server declared lost at step `step`; another holds its range.
  void LoseServer(int server, int64_t step);
  // Rolled back to a checkpoint under the cluster map `remap` describes (its epoch; servers
  // renumbered, none lost), from step `step`: every live worker trains again. The view carries
  // `remap`, the next one no longer does.
  void Rollback(ServerRemap remap, int64_t step);

  // --min_workers `want`: whether fewer workers than that are live. Becoming fewer is a view
  // ("pause", from `step`: the furthest step a live worker reported), having enough again is
  // another ("resume"). `now_s`: seconds on any clock, the same at every call.
  enum class Quorum { kUnchanged, kPaused, kResumed };
  Quorum CheckQuorum(int want, int64_t step, double now_s);

  // --- state ------------------------------------------------------------------------------
  const View& view() const { return view_; }
  // The worker computing `slice` (sync, ring), or holding place `slice` (async, SSP: its first
  // worker until a joiner took it over); -1: no such slice.
  int OwnerOf(int slice) const;
  // The slice a worker computes as its own: the one it joined for, else its id's.
  int OwnSliceOf(int worker) const;
  bool IsLost(int worker) const { return lost_.count(worker) > 0; }
  bool IsJoiner(int worker) const { return joined_.count(worker) > 0; }
  // A joiner not yet told to go (it computes nothing yet).
  bool IsWaiting(int worker) const { return waiting_.count(worker) > 0; }
  const std::set<int>& lost() const { return lost_; }
  bool IsServerLost(int server) const;
  // Workers not lost.
  int LiveCount() const;
  // Workers neither lost nor finished.
  int ActiveCount() const;
  // Place `place` and the joiners that held it (async, SSP: whose steps count for it).
  std::vector<int> HoldersOf(int place) const;
  int slices() const { return slices_; }
  bool paused() const { return paused_since_s_ >= 0; }
  // How long the present pause has lasted at `now_s` (0 when not paused), and the pauses that
  // ended, in all.
  double PausedFor(double now_s) const { return paused() ? now_s - paused_since_s_ : 0; }
  double paused_total_s() const { return paused_total_s_; }

 private:
  bool UsesSlices() const { return mode_.slices(); }
  // Stamps the view: number + 1, its step and reason, the live workers and the handovers.
  void NextView(const std::string& reason, int64_t step);
  // The live, unfinished worker (not a joiner waiting for its go) computing the fewest slices,
  // the first of them in registration order; -1 if none.
  int FewestSlices() const;

  JobMode mode_;
  int slices_;
  std::vector<int> workers_;  // registration order
  std::set<int> lost_, finished_;
  std::map<int, int> joined_;           // joiner -> the slice or place it joined for
  std::map<int, int> pending_release_;  // sync: slice -> the joiner waiting for it
  std::set<int> ready_joiners_;         // sync: joiners whose slice's release was asked for
  std::set<int> waiting_;               // joiners not yet told to go: they adopt nothing
  double paused_since_s_ = -1;          // --min_workers: since when too few are live (-1: enough)
  double paused_total_s_ = 0;
  View view_;
};

}  // namespace tteps::scheduler
