// The order of trips in one training epoch, as DeepTTE's public code makes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tteps::data {

// Indices of each batch of one epoch. All indices 0..lengths.size()-1 are shuffled with
// std::mt19937_64(seed + epoch), cut into chunks of batch_size * 100 and each chunk stably
// sorted by trip length, longest first (so a batch needs little padding), then cut into
// consecutive batches of batch_size; only the last may be smaller. Every index appears exactly
// once. batch_size 0 throws std::invalid_argument.
std::vector<std::vector<size_t>> EpochBatches(const std::vector<size_t>& lengths, size_t batch_size,
                                              uint64_t seed, int64_t epoch);

}  // namespace tteps::data
