#include "model/data/split.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "common/json_writer.h"
#include "model/data/shuffle.h"

namespace tteps::data {

Split SplitByFraction(size_t n, double eval_fraction, uint64_t seed) {
  if (!(eval_fraction >= 0 && eval_fraction < 1)) {
    throw std::invalid_argument("eval fraction " + JsonNumber(eval_fraction) + " is not in [0, 1)");
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  FisherYatesShuffle(&order, rng);
  const auto n_eval = static_cast<size_t>(std::llround(static_cast<double>(n) * eval_fraction));

  Split split;
  split.eval.assign(order.begin(), order.begin() + n_eval);
  split.train.assign(order.begin() + n_eval, order.end());
  std::sort(split.eval.begin(), split.eval.end());
  std::sort(split.train.begin(), split.train.end());
  return split;
}

std::string DescribeSplit(const Split& s, double eval_fraction, uint64_t seed) {
  return "split: " + std::to_string(s.train.size() + s.eval.size()) + " trips -> " +
         std::to_string(s.train.size()) + " train, " + std::to_string(s.eval.size()) +
         " eval (eval_fraction=" + JsonNumber(eval_fraction) + ", seed=" + std::to_string(seed) +
         ")";
}

}  // namespace tteps::data
