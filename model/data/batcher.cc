#include "model/data/batcher.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "model/data/shuffle.h"

namespace tteps::data {
namespace {

constexpr size_t kChunkBatches = 100;
constexpr size_t kWindowBlocks = 8;

// FisherYatesShuffle's draws, on four-byte indices.
void Shuffle(uint32_t* first, size_t n, std::mt19937_64& rng) {
  for (size_t i = n; i > 1; --i) std::swap(first[i - 1], first[UniformBelow(rng, i)]);
}

}  // namespace

EpochOrder::EpochOrder(size_t n, TripLength length, size_t batch_size, uint64_t seed, int64_t epoch,
                       size_t window)
    : length_(std::move(length)), batch_size_(batch_size) {
  if (batch_size == 0) throw std::invalid_argument("EpochOrder: batch_size must be positive");
  if (n > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("EpochOrder: " + std::to_string(n) + " trips are more than 2^32");
  }
  order_.resize(n);
  std::mt19937_64 rng(seed + static_cast<uint64_t>(epoch));
  if (window == 0 || window >= n) {
    std::iota(order_.begin(), order_.end(), uint32_t{0});
    Shuffle(order_.data(), n, rng);
  } else {
    const size_t block = (window + kWindowBlocks - 1) / kWindowBlocks;
    std::vector<uint32_t> blocks((n + block - 1) / block);
    std::iota(blocks.begin(), blocks.end(), uint32_t{0});
    Shuffle(blocks.data(), blocks.size(), rng);
    size_t at = 0;
    for (uint32_t b : blocks) {
      for (size_t i = b * block; i < std::min(n, (b + 1) * block); ++i) order_[at++] = i;
    }
    for (size_t w = 0; w < n; w += kWindowBlocks * block) {
      Shuffle(order_.data() + w, std::min(n, w + kWindowBlocks * block) - w, rng);
    }
  }
  chunk_ = batch_size > n / kChunkBatches ? std::max<size_t>(n, 1) : batch_size * kChunkBatches;
  sorted_.assign((n + chunk_ - 1) / chunk_, false);
}

std::vector<size_t> EpochOrder::Batch(size_t b) {
  const size_t n = order_.size();
  const size_t begin = b * batch_size_;
  if (b >= num_batches()) {
    throw std::out_of_range("EpochOrder: batch " + std::to_string(b) + " of " +
                            std::to_string(num_batches()));
  }
  const size_t c = begin / chunk_;
  if (!sorted_[c]) {
    // Stable sort by length, longest first, of the chunk's trips (their lengths read once).
    const size_t first = c * chunk_, size = std::min(n, first + chunk_) - first;
    std::vector<std::pair<size_t, uint32_t>> keyed(size);  // (length, trip)
    for (size_t i = 0; i < size; ++i) {
      keyed[i] = {length_(order_[first + i]), order_[first + i]};
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    for (size_t i = 0; i < size; ++i) order_[first + i] = keyed[i].second;
    sorted_[c] = true;
  }
  return {order_.begin() + begin, order_.begin() + std::min(n, begin + batch_size_)};
}

std::vector<std::vector<size_t>> EpochBatches(const std::vector<size_t>& lengths, size_t batch_size,
                                              uint64_t seed, int64_t epoch, size_t window) {
  EpochOrder order(
      lengths.size(), [&](size_t i) { return lengths[i]; }, batch_size, seed, epoch, window);
  std::vector<std::vector<size_t>> batches(order.num_batches());
  for (size_t b = 0; b < batches.size(); ++b) batches[b] = order.Batch(b);
  return batches;
}

}  // namespace tteps::data
