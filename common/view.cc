#include "common/view.h"

#include <glog/logging.h>

namespace tteps {
namespace {

// The entries of `now` past the first `before` ones (both lists only ever grow).
std::vector<int> Appended(const std::vector<int32_t>& now, size_t before) {
  return before < now.size() ? std::vector<int>(now.begin() + static_cast<long>(before), now.end())
                             : std::vector<int>{};
}

std::string ScheduleOf(const View& view, int slice) {
  const auto it = view.schedules.find(slice);
  return it == view.schedules.end() ? std::string() : it->second;
}

}  // namespace

ViewChanges ViewFollower::Follow(const View& view) {
  ViewChanges changes;
  if (view.number <= last_.number) return changes;
  changes.lost_workers = Appended(view.lost_workers, last_.lost_workers.size());
  // A new map renumbers the servers: its lost ones are counted afresh.
  const size_t servers_before = view.map_epoch == last_.map_epoch ? last_.lost_servers.size() : 0;
  if (view.map_epoch > last_.map_epoch) {
    // Views come in order, so the one starting an epoch comes before any other of it; a node
    // that registered under a later map was given that map's epoch.
    if (view.remap && view.remap->epoch == view.map_epoch) {
      changes.remap = view.remap;
    } else {
      LOG(ERROR) << "view " << view.number << " of map epoch " << view.map_epoch
                 << " does not carry that map's servers; this node holds epoch " << last_.map_epoch;
    }
  }
  changes.lost_servers = Appended(view.lost_servers, servers_before);
  for (const auto& [place, holder] : view.places) {
    const auto before = last_.places.find(place);
    if (before == last_.places.end() || !(before->second == holder)) {
      changes.places.emplace_back(place, holder);
    }
  }
  if (view.paused != last_.paused) {
    changes.pause = view.paused ? ViewChanges::Pause::kPause : ViewChanges::Pause::kResume;
  }
  if (me_ >= 0) FollowSlices(view, &changes);
  last_ = view;
  return changes;
}

void ViewFollower::FollowSlices(const View& view, ViewChanges* changes) {
  std::set<int> mine;  // slices beyond its own that the view has this worker compute
  for (size_t s = 0; s < view.slice_owner.size(); ++s) {
    if (view.slice_owner[s] == me_ && static_cast<int>(s) != own_) mine.insert(static_cast<int>(s));
  }
  for (int s : mine) {
    const bool handed_over = view.handover.count(s) > 0;
    if (released_.count(s)) {
      // Released: a joiner takes it (nothing to do), or was lost meanwhile and the slice came
      // back (compute it again).
      if (handed_over) continue;
      released_.erase(s);
    }
    if (!held_.count(s)) {
      held_.insert(s);
      changes->adopt.emplace_back(s, ScheduleOf(view, s));
    }
    if (handed_over) {
      held_.erase(s);
      released_.insert(s);
      changes->release.push_back(s);
    }
  }
  // Slices the view gave to others: never computed twice.
  for (auto it = held_.begin(); it != held_.end();) {
    if (mine.count(*it)) {
      ++it;
      continue;
    }
    changes->release.push_back(*it);
    it = held_.erase(it);
  }
  for (auto it = released_.begin(); it != released_.end();) {
    it = mine.count(*it) ? std::next(it) : released_.erase(it);
  }
}

}  // namespace tteps
