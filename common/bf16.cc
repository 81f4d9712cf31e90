#include "common/bf16.h"

#include <cstring>

namespace tteps {

void ToBf16(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
      out[i] = static_cast<uint16_t>((bits >> 16) | 0x0040u);  // a quiet NaN, never infinity
      continue;
    }
    // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate.
    bits += 0x7fffu + ((bits >> 16) & 1u);
    out[i] = static_cast<uint16_t>(bits >> 16);
  }
}

void FromBf16(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(&out[i], &bits, sizeof bits);
  }
}

void GatherBf16(const float* flat, int64_t base, const std::vector<KeyRange>& spans,
                uint16_t* out) {
  for (const auto& r : spans) {
    ToBf16(flat + (r.begin - base), static_cast<size_t>(r.size()), out);
    out += r.size();
  }
}

void ScatterBf16(const uint16_t* in, const std::vector<KeyRange>& spans, int64_t base,
                 float* flat) {
  for (const auto& r : spans) {
    FromBf16(in, static_cast<size_t>(r.size()), flat + (r.begin - base));
    in += r.size();
  }
}

}  // namespace tteps
