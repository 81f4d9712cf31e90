#include "common/view_update.h"

#include <glog/logging.h>

#include <algorithm>
#include <unordered_set>

#include "common/cereal_body.h"

namespace tteps {
namespace {

ListChange ListChangeOf(const std::vector<int32_t>& before, const std::vector<int32_t>& now) {
  ListChange c;
  const std::unordered_set<int32_t> present(now.begin(), now.end());
  std::vector<int32_t> kept;
  for (int32_t id : before) (present.count(id) ? kept : c.removed).push_back(id);
  const auto mismatch = std::mismatch(kept.begin(), kept.end(), now.begin(), now.end());
  c.keep = static_cast<uint32_t>(mismatch.first - kept.begin());
  c.tail.assign(mismatch.second, now.end());
  return c;
}

std::vector<int32_t> Applied(const std::vector<int32_t>& before, const ListChange& c) {
  const std::unordered_set<int32_t> removed(c.removed.begin(), c.removed.end());
  std::vector<int32_t> out;
  for (int32_t id : before) {
    if (out.size() == c.keep) break;
    if (!removed.count(id)) out.push_back(id);
  }
  out.insert(out.end(), c.tail.begin(), c.tail.end());
  return out;
}

SlotChange SlotChangeOf(const std::vector<int32_t>& before, const std::vector<int32_t>& now) {
  SlotChange c;
  c.size = static_cast<uint32_t>(now.size());
  for (size_t i = 0; i < now.size(); ++i) {
    if (i >= before.size() || before[i] != now[i]) c.set.emplace_back(int32_t(i), now[i]);
  }
  return c;
}

std::vector<int32_t> Applied(std::vector<int32_t> before, const SlotChange& c) {
  before.resize(c.size, -1);
  for (const auto& [i, v] : c.set) {
    if (i >= 0 && static_cast<uint32_t>(i) < c.size) before[i] = v;
  }
  return before;
}

template <class V>
MapChange<V> MapChangeOf(const std::map<int32_t, V>& before, const std::map<int32_t, V>& now) {
  MapChange<V> c;
  for (const auto& [k, v] : before) {
    if (!now.count(k)) c.erased.push_back(k);
  }
  for (const auto& [k, v] : now) {
    const auto it = before.find(k);
    if (it == before.end() || !(it->second == v)) c.set.emplace(k, v);
  }
  return c;
}

template <class V>
std::map<int32_t, V> Applied(std::map<int32_t, V> before, const MapChange<V>& c) {
  for (int32_t k : c.erased) before.erase(k);
  for (const auto& [k, v] : c.set) before[k] = v;
  return before;
}

}  // namespace

ViewUpdate WholeView(const View& view) {
  ViewUpdate u;
  u.view = view;
  return u;
}

ViewUpdate ViewChangesFrom(const View& base, const View& view) {
  ViewUpdate u;
  u.base = base.number;
  u.view = view;  // its scalars and remap; the lists go as changes
  u.view.live.clear();
  u.view.lost_workers.clear();
  u.view.lost_servers.clear();
  u.view.slice_owner.clear();
  u.view.handover.clear();
  u.view.places.clear();
  u.view.schedules.clear();
  u.live = ListChangeOf(base.live, view.live);
  u.lost_workers = ListChangeOf(base.lost_workers, view.lost_workers);
  u.lost_servers = ListChangeOf(base.lost_servers, view.lost_servers);
  u.slice_owner = SlotChangeOf(base.slice_owner, view.slice_owner);
  u.handover = MapChangeOf(base.handover, view.handover);
  u.places = MapChangeOf(base.places, view.places);
  u.schedules = MapChangeOf(base.schedules, view.schedules);
  // The changes must make the view exactly; should they not, the view goes whole.
  if (EncodeCereal(ApplyViewUpdate(base, u)) != EncodeCereal(view)) {
    LOG(ERROR) << "view " << view.number << " differs from its changes from view " << base.number
               << "; it is sent whole";
    return WholeView(view);
  }
  return u;
}

View ApplyViewUpdate(const View& base, const ViewUpdate& u) {
  if (u.base < 0) return u.view;
  View v = u.view;
  v.live = Applied(base.live, u.live);
  v.lost_workers = Applied(base.lost_workers, u.lost_workers);
  v.lost_servers = Applied(base.lost_servers, u.lost_servers);
  v.slice_owner = Applied(base.slice_owner, u.slice_owner);
  v.handover = Applied(base.handover, u.handover);
  v.places = Applied(base.places, u.places);
  v.schedules = Applied(base.schedules, u.schedules);
  return v;
}

std::optional<View> ViewAssembler::Take(const ViewUpdate& update) {
  if (update.base < 0) {
    // A whole view older than the one held (sent twice, to a joiner) does not replace it.
    if (!last_ || update.view.number >= last_->number) last_ = update.view;
    return update.view;
  }
  if (!last_ || last_->number != update.base) return std::nullopt;
  last_ = ApplyViewUpdate(*last_, update);
  return last_;
}

}  // namespace tteps
