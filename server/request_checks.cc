#include "server/request_checks.h"

#include <cmath>

#include "common/numerics.h"

namespace tteps::server {

std::string RequestProblem(const Header& h, const ClusterMap& map, const KeyRange& range) {
  if (h.epoch < map.epoch) {  // sent before a rollback, or by a node that missed it
    return "a request of epoch " + std::to_string(h.epoch) + "; this server serves " +
           std::to_string(map.epoch) + " (each rollback starts a new one)";
  }
  if (h.fingerprint != map.fingerprint) {
    return "parameter layout fingerprint " + std::to_string(h.fingerprint) +
           " does not match the job's " + std::to_string(map.fingerprint);
  }
  if (h.step < 0) return "negative step " + std::to_string(h.step);
  // A request names all of this server's keys (dense) or some of them (sparse rows); an init
  // names all.
  const bool whole = h.ranges.size() == 1 && h.ranges[0] == range;
  if ((h.type == MsgType::kInit && !whole) || !CheckSpans(h.ranges, range).empty()) {
    return "this server holds " + range.ToString() + ", the request names other keys";
  }
  return "";
}

std::string PushProblem(const Header& h, int64_t max_push_trips) {
  if (h.samples > max_push_trips) {
    return "push claims " + std::to_string(h.samples) + " trips, more than a step can hold (" +
           std::to_string(max_push_trips) + ")";
  }
  if (!std::isfinite(h.norm)) return "push with a non-finite norm";
  if (!(h.noise_sq >= 0 && h.noise_n2 >= 0 && std::isfinite(h.noise_sq) &&
        std::isfinite(h.noise_n2))) {
    return "push with a negative or non-finite gradient noise";
  }
  return "";
}

std::string NonFiniteProblem(const Header& h, const float* values, const char* what) {
  const size_t n = static_cast<size_t>(SpanKeys(h.ranges));
  const size_t at = FirstNonFinite(values, n);
  if (at == n) return "";
  int64_t key = 0;  // the key of value `at`, across the message's spans
  size_t before = 0;
  for (const auto& r : h.ranges) {
    if (at < before + static_cast<size_t>(r.size())) {
      key = r.begin + static_cast<int64_t>(at - before);
      break;
    }
    before += static_cast<size_t>(r.size());
  }
  return std::string(what) + " value " + std::to_string(values[at]) + " at key " +
         std::to_string(key);
}

}  // namespace tteps::server
