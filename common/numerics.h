// Numerics on float spans that the servers and the workers share.
#pragma once

#include <cstddef>

namespace tteps {

// Sum of squares of a span, accumulated in double (in a fixed order: the result is deterministic).
double SquaredNorm(const float* v, size_t n);

// Index of the first NaN or infinity in a span; n if every value is finite.
size_t FirstNonFinite(const float* v, size_t n);

}  // namespace tteps
