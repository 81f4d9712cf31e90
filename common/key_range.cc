#include "common/key_range.h"

#include <algorithm>
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

std::vector<KeyRange> PartitionKeys(int64_t total, int parts, const std::vector<KeyRange>& light) {
  const std::string bad = CheckSpans(light, {0, total});
  if (!bad.empty()) throw std::invalid_argument("light keys: " + bad);
  const int64_t heavy = total - SpanKeys(light);
  // Shares of the heavy keys, then each range's end just after its last heavy key.
  const std::vector<KeyRange> shares = PartitionKeys(heavy, parts);
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
