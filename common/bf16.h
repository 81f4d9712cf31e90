// bfloat16 on the wire (--wire_dtype bf16): the top 16 bits of a float32, rounded to nearest
// even; NaN stays NaN. Models and servers keep float32; only messages carry bf16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/key_range.h"

namespace tteps {

void ToBf16(const float* in, size_t n, uint16_t* out);
void FromBf16(const uint16_t* in, size_t n, float* out);
// GatherSpans and ScatterSpans (common/key_range.h) with the values travelling as bf16.
void GatherBf16(const float* flat, int64_t base, const std::vector<KeyRange>& spans, uint16_t* out);
void ScatterBf16(const uint16_t* in, const std::vector<KeyRange>& spans, int64_t base, float* flat);

}  // namespace tteps
