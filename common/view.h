// The job's membership as the scheduler decided it, one numbered view per change: the live and
// lost workers, who computes which slice of the global batch, who holds a lost worker's place,
// which servers are lost, whether training is paused, and after a rollback the new cluster map's
// servers. A view holds from step `from_step` on.
// The scheduler sends every view to every live node (topic "view", whole or as its changes:
// common/view_update.h), and each node reacts to every change through one path: ViewFollower
// says what changed for it since the last view it followed (scheduler/membership.h decides the
// views; worker/scheduler_commands.cc and server/server_commands.cc follow them).
#pragma once

#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/cluster_map.h"

namespace tteps {

// Async and SSP: the joiner that holds a lost worker's place; the servers count its pushes for
// the place from `clock` on.
struct Place {
  int32_t joiner = -1;
  int64_t clock = 0;
  bool operator==(const Place& o) const { return joiner == o.joiner && clock == o.clock; }
  template <class A>
  void serialize(A& ar) {
    ar(joiner, clock);
  }
};

struct View {
  int64_t number = 0;  // 0: the job as launched; + 1 for every change
  int64_t from_step = 0;
  // start, lost, join, handover, handback, pause, resume, server lost, rollback
  std::string reason = "start";
  int32_t map_epoch = 0;  // the cluster map's (a rollback renumbers servers)
  // The view that starts map_epoch (a rollback, a server lost without a replica): the new map's
  // servers, keys and resume point. Empty in every other view.
  std::optional<ServerRemap> remap;
  std::vector<int32_t> live;          // workers in the job, in the order they registered
  std::vector<int32_t> lost_workers;  // in the order they were declared lost
  std::vector<int32_t> slice_owner;   // sync, ring: who computes each slice
  // Sync: slice -> the ready joiner it goes to; its adopter leaves it at its next step boundary
  // and says so (a joiner lost meanwhile: the slice comes back to the adopter after that).
  std::map<int32_t, int32_t> handover;
  std::map<int32_t, Place> places;           // async, SSP: lost worker's place -> its joiner
  std::vector<int32_t> lost_servers;         // of map_epoch's map, in the order declared
  bool paused = false;                       // --min_workers: too few workers live
  std::string pause_reason;                  // why, in words
  std::map<int32_t, std::string> schedules;  // adopted slices: SliceSchedule::Encode (or empty)

  template <class A>
  void serialize(A& ar) {
    ar(number, from_step, reason, map_epoch, remap, live, lost_workers, slice_owner, handover,
       places, lost_servers, paused, pause_reason, schedules);
  }
};


// What changed for one node since the view it followed before.
struct ViewChanges {
  std::vector<int> lost_workers;              // declared lost since, in order
  std::vector<int> lost_servers;              // of the present map, declared lost since
  std::vector<std::pair<int, Place>> places;  // places taken (again) since
  // Worker `me`: slices to compute from its next step (with their schedules), and adopted
  // slices to leave at its next step boundary (and say at which step).
  std::vector<std::pair<int, std::string>> adopt;
  std::vector<int> release;
  enum class Pause { kUnchanged, kPause, kResume } pause = Pause::kUnchanged;
  // A rollback: the new map's servers (the node stops serving or training under the old map).
  std::optional<ServerRemap> remap;
  bool empty() const {
    return lost_workers.empty() && lost_servers.empty() && places.empty() && adopt.empty() &&
           release.empty() && pause == Pause::kUnchanged && !remap;
  }
};

class ViewFollower {
 public:
  // A server's follower (no slices of its own), holding the cluster map of epoch `map_epoch`.
  explicit ViewFollower(int map_epoch = 0) { last_.map_epoch = map_epoch; }
  // Worker `me`, whose own slice is `own_slice` (a joiner's: the lost worker's it joined for).
  ViewFollower(int me, int own_slice, int map_epoch = 0) : me_(me), own_(own_slice) {
    last_.map_epoch = map_epoch;
  }

  // What `view` changes for this node; nothing for a view not newer than the last one followed.
  ViewChanges Follow(const View& view);

  // Slices beyond its own that this worker computes (adopted and not released).
  const std::set<int>& held() const { return held_; }
  const View& last() const { return last_; }

 private:
  void FollowSlices(const View& view, ViewChanges* changes);

  int me_ = -1, own_ = -1;
  View last_;
  std::set<int> held_;      // adopted, not released
  std::set<int> released_;  // released; the view still names this worker until the joiner takes it
};

}  // namespace tteps
