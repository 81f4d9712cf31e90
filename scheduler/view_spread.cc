#include "scheduler/view_spread.h"

#include <algorithm>
#include <climits>

namespace tteps::scheduler {

void ViewSpread::Sent(int64_t number, const std::string& reason, double wall_s) {
  pending_.emplace(number, Pending{reason, wall_s});
}

std::vector<JsonObject> ViewSpread::Heard(const NodeTable& nodes, double wall_s) {
  std::vector<JsonObject> lines;
  if (pending_.empty()) return lines;
  int64_t everywhere = INT64_MAX;  // the last view every live node followed
  for (const Node& n : nodes.all()) {
    if (n.lost || (n.info.role != Role::kWorker && n.info.role != Role::kServer)) continue;
    everywhere = std::min(everywhere, n.view);
  }
  for (auto it = pending_.begin(); it != pending_.end() && it->first <= everywhere;) {
    lines.push_back(JsonObject()
                        .Add("type", "view_followed")
                        .Add("view", it->first)
                        .Add("reason", it->second.reason)
                        .Add("followed_s", wall_s - it->second.sent_s)
                        .Add("wall_s", wall_s));
    it = pending_.erase(it);
  }
  return lines;
}

}  // namespace tteps::scheduler
