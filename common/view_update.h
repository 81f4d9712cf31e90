// A membership view on the wire: whole, or as what changed since the view the node was sent
// before. A whole view holds every live worker, every lost one and every slice's owner, so
// sending it whole to every node at every change costs the scheduler O(W) bytes a node, O(W^2)
// a change; what changes is a few entries. The scheduler knows which view it last sent each node
// and sends the changes only where the node holds that view (common/view.h).
#pragma once

#include <cereal/types/map.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "common/topic.h"
#include "common/view.h"

namespace tteps {

// A list of ids from another: drop `removed`, keep the first `keep` of the rest, append `tail`.
struct ListChange {
  std::vector<int32_t> removed;
  uint32_t keep = 0;
  std::vector<int32_t> tail;
  template <class A>
  void serialize(A& ar) {
    ar(removed, keep, tail);
  }
};

// A list indexed by position (slice -> owner): its new size and the entries that differ.
struct SlotChange {
  uint32_t size = 0;
  std::vector<std::pair<int32_t, int32_t>> set;
  template <class A>
  void serialize(A& ar) {
    ar(size, set);
  }
};

template <class V>
struct MapChange {
  std::vector<int32_t> erased;
  std::map<int32_t, V> set;
  template <class A>
  void serialize(A& ar) {
    ar(erased, set);
  }
};

struct ViewUpdate {
  // -1: `view` is whole. Otherwise the number of the view these are the changes from: `view`
  // then holds the new view's scalars and remap, and its lists are empty.
  int64_t base = -1;
  View view;
  ListChange live, lost_workers, lost_servers;
  SlotChange slice_owner;
  MapChange<int32_t> handover;
  MapChange<Place> places;
  MapChange<std::string> schedules;

  template <class A>
  void serialize(A& ar) {
    ar(base, view, live, lost_workers, lost_servers, slice_owner, handover, places, schedules);
  }
};

inline constexpr Topic<ViewUpdate> kView{"view"};

ViewUpdate WholeView(const View& view);
// The changes from `base` to `view`, or the whole view where they would not rebuild it exactly.
ViewUpdate ViewChangesFrom(const View& base, const View& view);
// `base` with `update`'s changes (update.base must be base.number).
View ApplyViewUpdate(const View& base, const ViewUpdate& update);

// A node's side: the whole views its updates make.
class ViewAssembler {
 public:
  // The view `update` makes; nothing for changes from a view this node does not hold (a message
  // lost on a reconnect): the node then asks for the whole view (ControlChannel).
  std::optional<View> Take(const ViewUpdate& update);

 private:
  std::optional<View> last_;
};

}  // namespace tteps
