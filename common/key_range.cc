#include "common/key_range.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace tteps {

std::string KeyRange::ToString() const {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

std::vector<KeyRange> PartitionKeys(int64_t total, int parts) {
  if (parts < 1) throw std::invalid_argument("cannot partition keys over < 1 server");
  if (total < parts) {
    throw std::invalid_argument("cannot cut " + std::to_string(total) + " keys into " +
                                std::to_string(parts) + " non-empty ranges");
  }
  std::vector<KeyRange> out;
  const int64_t base = total / parts, extra = total % parts;
  int64_t begin = 0;
  for (int i = 0; i < parts; ++i) {
    const int64_t size = base + (i < extra ? 1 : 0);
    out.push_back({begin, begin + size});
    begin += size;
  }
  return out;
}

namespace {

// [0, n) cut in proportion to `weights` (equal ones: as PartitionKeys(n, parts)).
std::vector<KeyRange> WeightedShares(int64_t n, const std::vector<double>& weights) {
  const int parts = static_cast<int>(weights.size());
  if (parts < 1) throw std::invalid_argument("cannot partition keys over < 1 server");
  for (double w : weights) {
    if (!(w > 0) || !std::isfinite(w)) {
      throw std::invalid_argument("partition weight " + std::to_string(w) + " is not > 0");
    }
  }
  if (std::adjacent_find(weights.begin(), weights.end(), std::not_equal_to<double>()) ==
      weights.end()) {
    return PartitionKeys(n, parts);
  }
  if (n < parts) return PartitionKeys(n, parts);  // throws, naming the sizes
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<KeyRange> out;
  double cumulative = 0;
  int64_t begin = 0;
  for (int i = 0; i < parts; ++i) {
    cumulative += weights[i];
    int64_t end = i + 1 == parts ? n : std::llround(static_cast<double>(n) * cumulative / sum);
    // At least one key each, and room for one each after it.
    end = std::min(std::max(end, begin + 1), n - (parts - 1 - i));
    out.push_back({begin, end});
    begin = end;
  }
  return out;
}

// Ranges of [0, total) holding the heavy (non-light) keys of `shares` each.
std::vector<KeyRange> RangesOfShares(int64_t total, const std::vector<KeyRange>& shares,
                                     const std::vector<KeyRange>& light) {
  std::vector<KeyRange> out;
  int64_t begin = 0, key = 0, seen = 0;  // seen: heavy keys before `key`
  size_t next_light = 0;
  for (const KeyRange& share : shares) {
    // Walk to the position of heavy key number share.end - 1.
    while (true) {
      if (next_light < light.size() && light[next_light].begin == key) {
        key = light[next_light++].end;
        continue;
      }
      const int64_t run_end = next_light < light.size() ? light[next_light].begin : total;
      if (seen + (run_end - key) >= share.end) {
        key += share.end - seen;
        seen = share.end;
        break;
      }
      seen += run_end - key;
      key = run_end;
    }
    out.push_back({begin, key});
    begin = key;
  }
  out.back().end = total;  // light keys after the last heavy one
  return out;
}

int64_t HeavyKeys(int64_t total, const std::vector<KeyRange>& light) {
  const std::string bad = CheckSpans(light, {0, total});
  if (!bad.empty()) throw std::invalid_argument("light keys: " + bad);
  return total - SpanKeys(light);
}

}  // namespace

std::vector<KeyRange> PartitionKeys(int64_t total, int parts, const std::vector<KeyRange>& light) {
  return RangesOfShares(total, PartitionKeys(HeavyKeys(total, light), parts), light);
}

std::vector<KeyRange> PartitionKeys(int64_t total, const std::vector<double>& weights,
                                    const std::vector<KeyRange>& light) {
  return RangesOfShares(total, WeightedShares(HeavyKeys(total, light), weights), light);
}

KeyRange Intersect(const KeyRange& range, const KeyRange& within) {
  const int64_t b = std::max(range.begin, within.begin), e = std::min(range.end, within.end);
  return b < e ? KeyRange{b, e} : KeyRange{b, b};
}

int64_t SpanKeys(const std::vector<KeyRange>& spans) {
  int64_t n = 0;
  for (const auto& r : spans) n += r.size();
  return n;
}

std::string CheckSpans(const std::vector<KeyRange>& spans, const KeyRange& within) {
  int64_t last = within.begin;
  for (const auto& r : spans) {
    if (r.end <= r.begin) return "empty key range " + r.ToString();
    if (r.begin < last) return "key range " + r.ToString() + " overlaps or precedes the one before";
    if (r.end > within.end)
      return "key range " + r.ToString() + " lies outside " + within.ToString();
    last = r.end;
  }
  return "";
}

std::vector<KeyRange> ClipSpans(const std::vector<KeyRange>& spans, const KeyRange& within) {
  std::vector<KeyRange> out;
  for (const auto& r : spans) {
    const KeyRange c = Intersect(r, within);
    if (c.size() > 0) out.push_back(c);
  }
  return out;
}

void GatherSpans(const float* flat, int64_t base, const std::vector<KeyRange>& spans, float* out) {
  for (const auto& r : spans) out = std::copy(flat + (r.begin - base), flat + (r.end - base), out);
}

void ScatterSpans(const float* in, const std::vector<KeyRange>& spans, int64_t base, float* flat) {
  for (const auto& r : spans) {
    std::copy(in, in + r.size(), flat + (r.begin - base));
    in += r.size();
  }
}

void AddSpans(const float* in, const std::vector<KeyRange>& spans, int64_t base, float* flat) {
  for (const auto& r : spans) {
    float* to = flat + (r.begin - base);
    for (int64_t i = 0; i < r.size(); ++i) to[i] += in[i];
    in += r.size();
  }
}

}  // namespace tteps
