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

// The part of `range` that lies inside `within`; empty (size 0) if they do not overlap.
KeyRange Intersect(const KeyRange& range, const KeyRange& within);

}  // namespace tteps
