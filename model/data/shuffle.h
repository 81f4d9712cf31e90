// A Fisher–Yates shuffle on std::mt19937_64 that gives the same order with every standard
// library (std::shuffle and std::uniform_int_distribution are implementation-defined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tteps::data {

// Unbiased uniform integer in [0, bound), bound > 0, by rejection.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound);

void FisherYatesShuffle(std::vector<size_t>* v, std::mt19937_64& rng);

}  // namespace tteps::data
