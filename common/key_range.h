// Contiguous ranges of keys (float offsets into the flat parameter vector) and their partition
// over servers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tteps {

struct KeyRange {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
  int64_t size() const { return end - begin; }
  bool operator==(const KeyRange& o) const { return begin == o.begin && end == o.end; }
  std::string ToString() const;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(begin, end);
  }
};

// Cuts [0, total) into `parts` contiguous ranges whose sizes differ by at most one key, so a
// large tensor may span servers. Throws std::invalid_argument if parts < 1 or total < parts.
std::vector<KeyRange> PartitionKeys(int64_t total, int parts);

// The same over the keys outside `light` (sorted, disjoint spans): each range holds an equal
// share of them, as above, and the light keys go with the range they fall in. For sparse rows,
// whose embedding tables hardly travel: the ranges are balanced by the bytes on the wire, not by
// keys. Throws std::invalid_argument if fewer than `parts` keys lie outside `light`.
std::vector<KeyRange> PartitionKeys(int64_t total, int parts, const std::vector<KeyRange>& light);

// The same with range i holding a share of the keys outside `light` in proportion to
// weights[i] (> 0; each range at least one of them). Equal weights cut as above.
std::vector<KeyRange> PartitionKeys(int64_t total, const std::vector<double>& weights,
                                    const std::vector<KeyRange>& light);

// The part of `range` that lies inside `within`; empty (size 0) if they do not overlap.
KeyRange Intersect(const KeyRange& range, const KeyRange& within);

// Spans: a sparse part of the flat vector as sorted, disjoint, non-empty ranges whose values
// travel concatenated in span order (a dense range is the single span of itself).

// Keys the spans hold.
int64_t SpanKeys(const std::vector<KeyRange>& spans);
// "" when the spans are sorted, disjoint, non-empty and inside `within`; else what is wrong.
std::string CheckSpans(const std::vector<KeyRange>& spans, const KeyRange& within);
// The parts of the spans inside `within`.
std::vector<KeyRange> ClipSpans(const std::vector<KeyRange>& spans, const KeyRange& within);
// `flat` holds the keys from `base` on. Gather copies the spans' values out of it back to back;
// Scatter writes them back, Add adds them in.
void GatherSpans(const float* flat, int64_t base, const std::vector<KeyRange>& spans, float* out);
void ScatterSpans(const float* in, const std::vector<KeyRange>& spans, int64_t base, float* flat);
void AddSpans(const float* in, const std::vector<KeyRange>& spans, int64_t base, float* flat);

}  // namespace tteps
