#include "model/data/split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace tteps::data {
namespace {

TEST(SplitByFraction, DisjointCoveringAndSized) {
  const Split s = SplitByFraction(1000, 0.1, 7);
  EXPECT_EQ(s.eval.size(), 100u);
  EXPECT_EQ(s.train.size(), 900u);
  EXPECT_TRUE(std::is_sorted(s.eval.begin(), s.eval.end()));
  EXPECT_TRUE(std::is_sorted(s.train.begin(), s.train.end()));
  std::vector<size_t> all = s.train;
  all.insert(all.end(), s.eval.begin(), s.eval.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i);  // disjoint and covering
  // Not simply the first or last 100.
  EXPECT_NE(s.eval.front(), 0u);
  EXPECT_LT(s.eval.front(), 900u);
}

TEST(SplitByFraction, DeterministicPerSeed) {
  EXPECT_EQ(SplitByFraction(500, 0.2, 3).eval, SplitByFraction(500, 0.2, 3).eval);
  EXPECT_NE(SplitByFraction(500, 0.2, 3).eval, SplitByFraction(500, 0.2, 4).eval);
}

TEST(SplitByFraction, SizeIsRounded) {
  EXPECT_EQ(SplitByFraction(15, 0.1, 1).eval.size(), 2u);  // 1.5
  EXPECT_EQ(SplitByFraction(14, 0.1, 1).eval.size(), 1u);  // 1.4
  EXPECT_EQ(SplitByFraction(1200, 0.1, 1).eval.size(), 120u);
  EXPECT_TRUE(SplitByFraction(10, 0.0, 1).eval.empty());
  EXPECT_TRUE(SplitByFraction(0, 0.5, 1).train.empty());
}

TEST(SplitByFraction, RejectsFractionsOutsideZeroToOne) {
  EXPECT_THROW(SplitByFraction(10, 1.0, 1), std::invalid_argument);
  EXPECT_THROW(SplitByFraction(10, -0.1, 1), std::invalid_argument);
  EXPECT_THROW(SplitByFraction(10, std::nan(""), 1), std::invalid_argument);
}

TEST(DescribeSplit, OneLine) {
  const std::string d = DescribeSplit(SplitByFraction(1000, 0.1, 7), 0.1, 7);
  EXPECT_EQ(d, "split: 1000 trips -> 900 train, 100 eval (eval_fraction=0.1, seed=7)");
}

}  // namespace
}  // namespace tteps::data
