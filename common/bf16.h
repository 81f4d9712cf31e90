// bfloat16 on the wire (--wire_dtype bf16): the top 16 bits of a float32, rounded to nearest
// even; NaN stays NaN. Models and servers keep float32; only messages carry bf16.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tteps {

void ToBf16(const float* in, size_t n, uint16_t* out);
void FromBf16(const uint16_t* in, size_t n, float* out);

}  // namespace tteps
