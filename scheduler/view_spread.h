// How long each membership view takes to reach every node: a node says in its heartbeats the
// last view it followed, and sends one at once when it follows a new one (common/view.h,
// ControlChannel::NoteViewFollowed). Once every live worker and server has followed view N,
// the seconds since the scheduler sent it are a "view_followed" line of metrics.jsonl.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/json_writer.h"
#include "scheduler/node_table.h"

namespace tteps::scheduler {

class ViewSpread {
 public:
  // View `number` (for `reason`) went to every live node at `wall_s`.
  void Sent(int64_t number, const std::string& reason, double wall_s);
  // A node's heartbeat at `wall_s` may have moved it on (or one behind was lost): the views
  // every live worker and server has followed since, as metrics lines. A pass over the nodes
  // while a view is on its way (each node's acknowledgement of a view: O(nodes^2) per view, a
  // few milliseconds at a thousand nodes), nothing otherwise.
  std::vector<JsonObject> Heard(const NodeTable& nodes, double wall_s);

 private:
  struct Pending {
    std::string reason;
    double sent_s = 0;
  };
  std::map<int64_t, Pending> pending_;  // by view number
};

}  // namespace tteps::scheduler
