// The order of trips in one training epoch, as DeepTTE's public code makes it, for data sets of
// any size: the permutation takes four bytes per trip and each chunk is length-sorted only when
// its first batch is taken.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace tteps::data {

// The points of trip i.
using TripLength = std::function<size_t(size_t)>;

// Trips 0..n-1 are shuffled with std::mt19937_64(seed + epoch), cut into chunks of
// batch_size * 100 and each chunk stably sorted by trip length, longest first (so a batch needs
// little padding), then cut into consecutive batches of batch_size; only the last may be
// smaller. Every index appears exactly once.
//
// window > 0 (and < n) shuffles for a store larger than memory, so that reads stay mostly
// sequential: the trips, in data order, are cut into blocks of ceil(window / 8); the blocks are
// shuffled, and the trips within each run of 8 consecutive (shuffled) blocks, `window` trips,
// are shuffled together. An epoch then reads each block once, and at most `window` trips are
// in use at a time. window 0 (or >= n): every trip shuffled with every other.
class EpochOrder {
 public:
  // batch_size 0 throws std::invalid_argument; more than 2^32 trips std::length_error.
  EpochOrder(size_t n, TripLength length, size_t batch_size, uint64_t seed, int64_t epoch,
             size_t window = 0);
  size_t num_batches() const { return (order_.size() + batch_size_ - 1) / batch_size_; }
  // The trips of batch b (< num_batches()).
  std::vector<size_t> Batch(size_t b);

 private:
  std::vector<uint32_t> order_;
  TripLength length_;
  size_t batch_size_, chunk_;
  std::vector<bool> sorted_;  // per chunk
};

// Every batch of one epoch at once (tests, benchmarks).
std::vector<std::vector<size_t>> EpochBatches(const std::vector<size_t>& lengths, size_t batch_size,
                                              uint64_t seed, int64_t epoch, size_t window = 0);

}  // namespace tteps::data
