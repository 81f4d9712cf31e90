#include "model/data/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "model/data/shuffle.h"

namespace tteps::data {
namespace {

std::vector<size_t> RandomLengths(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<size_t> lengths(n);
  for (auto& l : lengths) l = 15 + UniformBelow(rng, 112);
  return lengths;
}

std::vector<size_t> Flatten(const std::vector<std::vector<size_t>>& batches) {
  std::vector<size_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

TEST(Shuffle, IsAFixedFisherYatesOnMt19937_64) {
  // Golden order: must not change with the standard library (or the code would be std::shuffle).
  std::vector<size_t> v(10);
  std::iota(v.begin(), v.end(), size_t{0});
  std::mt19937_64 rng(42);
  FisherYatesShuffle(&v, rng);
  EXPECT_EQ(v, (std::vector<size_t>{1, 7, 9, 0, 3, 8, 4, 2, 5, 6}));  // also checked in Python
  std::mt19937_64 one(1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(UniformBelow(one, 1), 0u);
}

TEST(EpochBatches, EveryIndexExactlyOncePerEpoch) {
  const size_t n = 1037, batch = 7;
  const std::vector<size_t> lengths = RandomLengths(n, 3);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const auto batches = EpochBatches(lengths, batch, 11, epoch);
    ASSERT_EQ(batches.size(), (n + batch - 1) / batch);
    for (size_t i = 0; i + 1 < batches.size(); ++i) EXPECT_EQ(batches[i].size(), batch);
    EXPECT_EQ(batches.back().size(), n % batch);  // the last one is smaller
    std::vector<size_t> all = Flatten(batches);
    std::sort(all.begin(), all.end());
    std::vector<size_t> expected(n);
    std::iota(expected.begin(), expected.end(), size_t{0});
    EXPECT_EQ(all, expected);
  }
}

TEST(EpochBatches, EachChunkOfAHundredBatchesIsSortedLongestFirst) {
  const size_t n = 2500, batch = 5, chunk = batch * 100;
  const std::vector<size_t> lengths = RandomLengths(n, 5);
  const std::vector<size_t> order = Flatten(EpochBatches(lengths, batch, 1, 0));
  bool rises_between_chunks = false;
  for (size_t i = 1; i < n; ++i) {
    if (i % chunk != 0) {
      EXPECT_GE(lengths[order[i - 1]], lengths[order[i]]) << "position " << i;
    } else if (lengths[order[i - 1]] < lengths[order[i]]) {
      rises_between_chunks = true;
    }
  }
  EXPECT_TRUE(rises_between_chunks);  // chunks are sorted separately, not the whole epoch
}

TEST(EpochBatches, EqualLengthsKeepTheShuffledOrder) {
  // The sort is stable, so with equal lengths the order is the shuffle with seed + epoch.
  const std::vector<size_t> lengths(300, 20);
  std::vector<size_t> expected(300);
  std::iota(expected.begin(), expected.end(), size_t{0});
  std::mt19937_64 rng(7 + 2);
  FisherYatesShuffle(&expected, rng);
  EXPECT_EQ(Flatten(EpochBatches(lengths, 4, 7, 2)), expected);
}

TEST(EpochBatches, OrderDependsOnSeedAndEpochOnly) {
  const std::vector<size_t> lengths = RandomLengths(400, 9);
  const auto a = EpochBatches(lengths, 3, 5, 0);
  EXPECT_EQ(a, EpochBatches(lengths, 3, 5, 0));
  EXPECT_NE(a, EpochBatches(lengths, 3, 5, 1));
  EXPECT_NE(a, EpochBatches(lengths, 3, 6, 0));
}

TEST(EpochBatches, EdgeCases) {
  EXPECT_THROW(EpochBatches({1, 2, 3}, 0, 1, 0), std::invalid_argument);
  EXPECT_TRUE(EpochBatches({}, 4, 1, 0).empty());
  const auto one = EpochBatches({5, 9, 7}, 10, 1, 0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], (std::vector<size_t>{1, 2, 0}));
}

TEST(EpochBatches, AWindowOfTheDataIsShuffledTogetherAndEveryTripTakenOnce) {
  // 1,000 trips, window 80: blocks of 10 consecutive trips, 8 blocks shuffled together.
  const auto lengths = RandomLengths(1000, 4);
  const auto batches = EpochBatches(lengths, 8, 3, 1, 80);
  std::vector<size_t> all = Flatten(batches);
  std::vector<size_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> expected(1000);
  std::iota(expected.begin(), expected.end(), size_t{0});
  EXPECT_EQ(sorted, expected);
  // Each run of 80 trips taken comes from 8 blocks of 10 (the chunk of 800 sorts by length
  // across 10 windows, so look at the order before sorting: batch size 1000 / 100 + 1).
  const auto unsorted = Flatten(EpochBatches(std::vector<size_t>(1000, 7), 8, 3, 1, 80));
  for (size_t w = 0; w < 1000; w += 80) {
    std::vector<size_t> blocks;
    for (size_t i = w; i < std::min<size_t>(1000, w + 80); ++i) blocks.push_back(unsorted[i] / 10);
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    EXPECT_LE(blocks.size(), 8u) << "window at " << w;
  }
  EXPECT_NE(unsorted, Flatten(EpochBatches(std::vector<size_t>(1000, 7), 8, 3, 2, 80)));
  // A window as large as the data is the full shuffle.
  EXPECT_EQ(EpochBatches(lengths, 8, 3, 1, 1000), EpochBatches(lengths, 8, 3, 1));
}

TEST(EpochOrder, SortsAChunkOnlyWhenItsFirstBatchIsTaken) {
  const auto lengths = RandomLengths(2000, 9);
  size_t calls = 0;
  EpochOrder order(
      2000,
      [&](size_t i) {
        ++calls;
        return lengths[i];
      },
      4, 1, 0);
  EXPECT_EQ(calls, 0u);
  EXPECT_EQ(order.Batch(0), EpochBatches(lengths, 4, 1, 0)[0]);
  EXPECT_EQ(calls, 400u);  // one chunk of 100 batches
  EXPECT_EQ(order.Batch(499), EpochBatches(lengths, 4, 1, 0)[499]);
  EXPECT_EQ(calls, 800u);
  EXPECT_THROW(order.Batch(500), std::out_of_range);
}

}  // namespace
}  // namespace tteps::data
