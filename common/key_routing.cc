#include "common/key_routing.h"

namespace tteps {

KeyRouting::KeyRouting(const ClusterMap& map) : ranges_(map.ranges) {
  const bool on_arrival = AppliesOnArrival(map.config.exchange.mode);
  for (size_t s = 0; s < map.servers.size(); ++s) {
    replicas_.push_back(tteps::ReplicasOf(map, static_cast<int>(s)));
    ordered_ = ordered_ || (replicas_.back().size() > 1 && on_arrival);
  }
  dead_.assign(map.servers.size(), false);
}

std::vector<std::vector<KeyRange>> KeyRouting::PerServer(const std::vector<KeyRange>& spans) const {
  std::vector<std::vector<KeyRange>> out;
  for (const KeyRange& r : ranges_) {
    std::vector<KeyRange> clipped = spans.empty() ? std::vector<KeyRange>{r} : ClipSpans(spans, r);
    // More spans than a header may hold: their hull instead. A superset, so still exact (keys
    // between the spans have zero gradient, or are not read); and no wider than the spans, so
    // a push completing parts never repeats a part's keys.
    if (clipped.size() > kMaxRanges) clipped = {{clipped.front().begin, clipped.back().end}};
    out.push_back(std::move(clipped));
  }
  return out;
}

size_t KeyRouting::ReaderOf(size_t s) const {
  for (int r : replicas_[s]) {
    if (!dead_[r]) return static_cast<size_t>(r);
  }
  return SIZE_MAX;
}

size_t KeyRouting::Lose(size_t s, bool* fresh) {
  *fresh = !dead_[s];
  dead_[s] = true;
  return ReaderOf(s);
}

bool KeyRouting::PushWaitsForBackups(size_t s) const {
  if (!ordered_ || ReaderOf(s) != s) return false;
  for (int r : replicas_[s]) {
    if (static_cast<size_t>(r) != s && !dead_[r]) return true;
  }
  return false;
}

}  // namespace tteps
