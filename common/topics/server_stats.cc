#include "common/topics/server_stats.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace tteps::server {

std::string HexHash(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

JsonObject ServerStats::ToJson() const {
  // Sums in double: the counts come off the wire, and no count may overflow anything.
  JsonObject hist;
  int64_t max = 0;
  double count = 0, sum = 0;
  for (const auto& [s, n] : staleness) {
    hist.Add(std::to_string(s), n);
    count += static_cast<double>(n);
    sum += static_cast<double>(s) * static_cast<double>(n);
    max = std::max(max, s);
  }
  // Percentiles from the histogram: the smallest staleness covering that share of pushes.
  auto percentile = [&](double q) {
    double seen = 0;
    for (const auto& [s, n] : staleness) {
      seen += static_cast<double>(n);
      if (seen >= q * count) return s;
    }
    return int64_t{0};
  };
  JsonObject summary;
  summary.Add("mean", count ? sum / count : 0.0)
      .Add("p50", percentile(0.5))
      .Add("p90", percentile(0.9))
      .Add("p99", percentile(0.99))
      .Add("max", max)
      .Add("histogram", hist);
  JsonObject out;
  out.Add("server", server)
      .Add("pushes", pushes)
      .Add("pulls", pulls)
      .Add("errors", errors)
      .Add("non_finite", non_finite)
      .Add("unauthenticated", unauthenticated)
      .Add("version", version)
      .Add("peak_rss_mb", peak_rss_mb)
      .Add("peak_private_mb", peak_private_mb)
      .Add("peak_shared_mb", peak_shared_mb)
      .Add("staleness", summary)
      .Add("state_hash", HexHash(state_hash));
  if (gain_steps > 0) {
    out.Add("lr_gain", JsonObject()
                           .Add("steps", gain_steps)
                           .Add("mean", gain_mean)
                           .Add("min", gain_min)
                           .Add("max", gain_max)
                           .Add("last", gain_last));
  }
  return out;
}

}  // namespace tteps::server
