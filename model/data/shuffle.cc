#include "model/data/shuffle.h"

#include <utility>

namespace tteps::data {

uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  // Values below `threshold` would make some results more likely than others: 2^64 mod bound.
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

void FisherYatesShuffle(std::vector<size_t>* v, std::mt19937_64& rng) {
  for (size_t i = v->size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(UniformBelow(rng, i));
    std::swap((*v)[i - 1], (*v)[j]);
  }
}

}  // namespace tteps::data
