#include "worker/data/batcher.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

#include "worker/data/shuffle.h"

namespace tteps::data {

std::vector<std::vector<size_t>> EpochBatches(const std::vector<size_t>& lengths, size_t batch_size,
                                              uint64_t seed, int64_t epoch) {
  if (batch_size == 0) throw std::invalid_argument("EpochBatches: batch_size must be positive");
  const size_t n = lengths.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed + static_cast<uint64_t>(epoch));
  FisherYatesShuffle(&order, rng);

  const size_t kChunkBatches = 100;
  const size_t chunk = batch_size > n / kChunkBatches ? n : batch_size * kChunkBatches;
  for (size_t begin = 0; begin < n; begin += chunk) {
    const auto first = order.begin() + begin;
    const auto last = order.begin() + std::min(n, begin + chunk);
    std::stable_sort(first, last, [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  }

  std::vector<std::vector<size_t>> batches;
  batches.reserve((n + batch_size - 1) / batch_size);
  for (size_t begin = 0; begin < n; begin += batch_size) {
    batches.emplace_back(order.begin() + begin, order.begin() + std::min(n, begin + batch_size));
  }
  return batches;
}

}  // namespace tteps::data
