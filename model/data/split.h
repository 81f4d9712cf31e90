// A deterministic train/eval split of the trips.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tteps::data {

struct Split {
  std::vector<size_t> train, eval;  // each sorted ascending
};

// Shuffles 0..n-1 with std::mt19937_64(seed) (FisherYatesShuffle); the first
// round(n * eval_fraction) go to eval, the rest to train. eval_fraction must be in [0, 1), else
// std::invalid_argument.
Split SplitByFraction(size_t n, double eval_fraction, uint64_t seed);

// One line for the log, e.g. "split: 1200 trips -> 1080 train, 120 eval (eval_fraction=0.1,
// seed=42)".
std::string DescribeSplit(const Split& s, double eval_fraction, uint64_t seed);

}  // namespace tteps::data
