#include "scheduler/membership.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <utility>

namespace tteps::scheduler {

Membership::Membership(JobMode mode, int workers, int slices)
    : mode_(mode), slices_(std::max(slices, workers)) {
  for (int w = 0; w < workers; ++w) workers_.push_back(w);
  view_.live = workers_;
  if (!UsesSlices()) return;
  view_.slice_owner = workers_;
  if (slices_ == workers || workers < 1) return;
  for (int s = workers; s < slices_; ++s) view_.slice_owner.push_back(FewestSlices());
  NextView("slices", 0);
}

int Membership::FewestSlices() const {
  const auto& owner = view_.slice_owner;
  int best = -1, best_count = INT32_MAX;
  for (int w : workers_) {
    // A joiner computes nothing before its go: it has no step to adopt from.
    if (finished_.count(w) || waiting_.count(w)) continue;
    const int count = static_cast<int>(std::count(owner.begin(), owner.end(), w));
    if (count < best_count) best = w, best_count = count;
  }
  return best;
}

void Membership::NextView(const std::string& reason, int64_t step) {
  ++view_.number;
  view_.from_step = step;
  view_.remap.reset();  // only the rollback's own view carries the new map
  view_.reason = reason;
  view_.live.clear();
  for (int w : workers_) {
    if (!lost_.count(w)) view_.live.push_back(w);
  }
  // A slice is handed over once its joiner is ready, until its adopter says it left it (or is
  // lost itself): a joiner lost meanwhile changes nothing before that, so the adopter computes
  // the slice again only after its release (the handback), never both at one boundary.
  view_.handover.clear();
  for (const auto& [slice, joiner] : pending_release_) {
    if (ready_joiners_.count(joiner)) view_.handover[slice] = joiner;
  }
  view_.paused = paused();
}

void Membership::Finish(int worker) { finished_.insert(worker); }

void Membership::Rollback(ServerRemap remap, int64_t step) {
  for (int w : workers_) {
    if (!lost_.count(w)) finished_.erase(w);
  }
  view_.map_epoch = remap.epoch;
  view_.lost_servers.clear();
  NextView("rollback", step);
  view_.remap = std::move(remap);
}

void Membership::LoseServer(int server, int64_t step) {
  view_.lost_servers.push_back(server);
  NextView("server lost", step);
}

bool Membership::IsServerLost(int server) const {
  const auto& lost = view_.lost_servers;
  return std::find(lost.begin(), lost.end(), server) != lost.end();
}

MembershipChange Membership::Lose(int worker, int64_t step) {
  MembershipChange change;
  finished_.insert(worker);
  lost_.insert(worker);
  view_.lost_workers.push_back(worker);
  waiting_.erase(worker);
  // A joiner lost before its slice was released to it: the slice stays with its adopter (a
  // release already asked for comes back to it, Released).
  const auto joined = joined_.find(worker);
  if (joined != joined_.end()) {
    const auto pending = pending_release_.find(joined->second);
    if (pending != pending_release_.end() && pending->second == worker &&
        !ready_joiners_.count(worker)) {
      pending_release_.erase(pending);
    }
  }
  if (UsesSlices()) {
    auto& owner = view_.slice_owner;
    for (int slice = 0; slice < slices_; ++slice) {
      if (owner[slice] != worker) continue;
      const int best = FewestSlices();
      if (best < 0) continue;  // every other worker is done: no step is left to compute
      owner[slice] = best;
      change.adopters.push_back(best);
      change.orphaned.push_back(slice);
      // A handover to a joiner lost meanwhile that the lost adopter never answered: void.
      const auto pending = pending_release_.find(slice);
      if (pending != pending_release_.end() && lost_.count(pending->second)) {
        pending_release_.erase(pending);
      }
    }
  } else {
    const int place = OwnSliceOf(worker);
    if (place >= 0 && place < slices_) change.orphaned.push_back(place);
    const auto held = view_.places.find(place);
    if (held != view_.places.end() && held->second.joiner == worker) view_.places.erase(held);
  }
  NextView("lost", step);
  return change;
}

std::string Membership::JoinRefusal(int* slice) const {
  if (mode_.places()) {
    // A lost worker's place that no live joiner has taken.
    for (int w : lost_) {
      if (w >= slices_) continue;
      const bool taken = std::any_of(joined_.begin(), joined_.end(), [&](const auto& j) {
        return j.second == w && !lost_.count(j.first);
      });
      if (!taken) {
        *slice = w;
        return "";
      }
    }
    return "no place to take: no lost worker's place is free";
  }
  if (const std::string why = mode_.JoinRefusal(); !why.empty()) return why;
  // An adopted slice (a lost worker's, computed by a survivor, not by a joiner of its own),
  // from the worker computing the most.
  const auto& owner = view_.slice_owner;
  int best = -1, best_load = 0;
  for (int x = 0; x < slices_; ++x) {
    if (OwnSliceOf(owner[x]) == x || pending_release_.count(x)) continue;
    const int load = static_cast<int>(std::count(owner.begin(), owner.end(), owner[x]));
    if (load > best_load) best = x, best_load = load;
  }
  if (best < 0) return "no slice to take over: no lost worker's slice is computed by another";
  *slice = best;
  return "";
}

int Membership::Join(int slice) {
  int id = slices_;  // beyond the job's workers and every joiner before
  for (int w : workers_) id = std::max(id, w + 1);
  workers_.push_back(id);
  waiting_.insert(id);
  joined_[id] = slice;
  if (mode_.lockstep()) pending_release_[slice] = id;
  return id;
}

MembershipChange Membership::JoinerReady(int joiner, int64_t step) {
  MembershipChange change;
  const int slice = joined_.at(joiner);
  if (!mode_.lockstep()) {
    waiting_.erase(joiner);
    view_.places[slice] = Place{joiner, step};
    change.goes.push_back({joiner, slice, step});
    change.owned.push_back(slice);
    NextView("join", step);
    return change;
  }
  // Loaded and built: the slice's adopter leaves it at its next step boundary.
  ready_joiners_.insert(joiner);
  NextView("handover", step);
  return change;
}

MembershipChange Membership::Released(int worker, int slice, int64_t step) {
  auto& owner = view_.slice_owner;
  // Only an adopted slice is ever released, never a worker's own.
  if (slice < 0 || slice >= static_cast<int>(owner.size()) || owner[slice] != worker ||
      OwnSliceOf(worker) == slice) {
    throw std::invalid_argument("worker " + std::to_string(worker) + " released slice " +
                                std::to_string(slice) + ", which it did not adopt");
  }
  MembershipChange change;
  const auto it = pending_release_.find(slice);
  if (it == pending_release_.end() || lost_.count(it->second)) {
    // The joiner was lost in the meantime: the slice goes back to the worker that left it.
    if (it != pending_release_.end()) pending_release_.erase(it);
    NextView("handback", step);
    return change;
  }
  const int joiner = it->second;
  pending_release_.erase(it);
  waiting_.erase(joiner);
  owner[slice] = joiner;
  change.owned.push_back(slice);
  change.goes.push_back({joiner, slice, step});
  NextView("join", step);
  return change;
}

Membership::Quorum Membership::CheckQuorum(int want, int64_t step, double now_s) {
  const bool short_now = LiveCount() < want;
  if (short_now == paused()) return Quorum::kUnchanged;
  if (short_now) {
    paused_since_s_ = now_s;
    NextView("pause", step);
    return Quorum::kPaused;
  }
  paused_total_s_ += now_s - paused_since_s_;
  paused_since_s_ = -1;
  NextView("resume", step);
  return Quorum::kResumed;
}

int Membership::OwnerOf(int slice) const {
  if (slice < 0 || slice >= slices_) return -1;
  if (UsesSlices()) return view_.slice_owner[slice];
  // A lost worker's place: the live worker that joined for it, if any.
  if (!lost_.count(slice)) return slice;
  for (const auto& [joiner, place] : joined_) {
    if (place == slice && !lost_.count(joiner)) return joiner;
  }
  return slice;
}

int Membership::OwnSliceOf(int worker) const {
  const auto joined = joined_.find(worker);
  return joined != joined_.end() ? joined->second : worker;
}

int Membership::LiveCount() const {
  return static_cast<int>(workers_.size() - lost_.size());  // only known workers are lost
}

int Membership::ActiveCount() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(), [&](int w) { return !finished_.count(w); }));
}

std::vector<int> Membership::HoldersOf(int place) const {
  std::vector<int> holders = {place};
  for (const auto& [joiner, held] : joined_) {
    if (held == place) holders.push_back(joiner);
  }
  return holders;
}

}  // namespace tteps::scheduler
