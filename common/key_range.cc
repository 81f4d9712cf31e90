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

KeyRange Intersect(const KeyRange& range, const KeyRange& within) {
  const int64_t b = std::max(range.begin, within.begin), e = std::min(range.end, within.end);
  return b < e ? KeyRange{b, e} : KeyRange{b, b};
}

}  // namespace tteps
