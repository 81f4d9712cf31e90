// The slicing of a global batch over workers: sizes (even split, or a fixed share for worker 0)
// and the slices themselves, which partition the batch and, over an epoch, the data set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/batch_slicer.h"

namespace tteps {
namespace {

int64_t Sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

TEST(SliceSizes, ExactExamples) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(SliceSizes(10, 3), (V{4, 3, 3}));
  EXPECT_EQ(SliceSizes(11, 3), (V{4, 4, 3}));
  EXPECT_EQ(SliceSizes(2, 4), (V{1, 1, 0, 0}));
  EXPECT_EQ(SliceSizes(0, 3), (V{0, 0, 0}));
  EXPECT_EQ(SliceSizes(10, 3, 2), (V{2, 4, 4}));
  EXPECT_EQ(SliceSizes(11, 4, 5), (V{5, 2, 2, 2}));
  EXPECT_EQ(SliceSizes(12, 4, 5), (V{5, 3, 2, 2}));
  EXPECT_EQ(SliceSizes(13, 4, 5), (V{5, 3, 3, 2}));
  EXPECT_EQ(SliceSizes(3, 4, 5), (V{3, 0, 0, 0}));
  EXPECT_EQ(SliceSizes(10, 3, 0), (V{0, 5, 5}));
  EXPECT_EQ(SliceSizes(10, 2, 10), (V{10, 0}));
  EXPECT_EQ(SliceSizes(64, 4), (V{16, 16, 16, 16}));
  EXPECT_EQ(SliceSizes(64, 4, 40), (V{40, 8, 8, 8}));
}

TEST(SliceSizes, AlwaysSumToTheBatch) {
  for (int64_t batch = 0; batch <= 130; ++batch) {
    for (int workers = 1; workers <= 9; ++workers) {
      for (int64_t b0 : {-1, 0, 1, 2, 7, 32, 64, 129, 1000}) {
        const auto sizes = SliceSizes(batch, workers, b0);
        ASSERT_EQ(sizes.size(), static_cast<size_t>(workers));
        EXPECT_EQ(Sum(sizes), batch) << batch << " " << workers << " " << b0;
        for (int64_t s : sizes) EXPECT_GE(s, 0) << batch << " " << workers << " " << b0;
      }
    }
  }
}

TEST(SliceSizes, EvenSplitPutsTheRemainderOnTheFirstWorkers) {
  for (int64_t batch = 0; batch <= 130; ++batch) {
    for (int workers = 1; workers <= 9; ++workers) {
      const auto sizes = SliceSizes(batch, workers);
      EXPECT_EQ(sizes, SliceSizes(batch, workers, -1));
      EXPECT_EQ(SliceSizes(batch, workers, -5), sizes);  // any negative b0 means "even"
      const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
      EXPECT_LE(*hi - *lo, 1);
      for (int w = 0; w < workers; ++w) {
        EXPECT_EQ(sizes[w], batch / workers + (w < batch % workers ? 1 : 0))
            << batch << " " << workers << " " << w;
      }
    }
  }
}

TEST(SliceSizes, FirstWorkerBatchGoesToWorkerZeroAndTheRestIsSharedFromWorkerOne) {
  for (int64_t batch = 0; batch <= 130; ++batch) {
    for (int workers = 2; workers <= 9; ++workers) {
      for (int64_t b0 : {0, 1, 2, 7, 32, 64, 129, 1000}) {
        const auto sizes = SliceSizes(batch, workers, b0);
        const int64_t first = std::min(b0, batch), rest = batch - first;
        const int64_t sharing = workers - 1;
        EXPECT_EQ(sizes[0], first);
        for (int w = 1; w < workers; ++w) {
          EXPECT_EQ(sizes[w], rest / sharing + (w - 1 < rest % sharing ? 1 : 0))
              << batch << " " << workers << " " << b0 << " " << w;
        }
      }
    }
  }
}

TEST(SliceSizes, OneWorkerGetsEverything) {
  for (int64_t batch : {0, 1, 5, 64, 1000}) {
    for (int64_t b0 : {-1, 0, 3, 64, 5000}) {
      EXPECT_EQ(SliceSizes(batch, 1, b0), std::vector<int64_t>{batch}) << batch << " " << b0;
    }
  }
}

TEST(SliceSizes, RejectsFewerThanOneWorker) {
  EXPECT_THROW(SliceSizes(10, 0), std::invalid_argument);
  EXPECT_THROW(SliceSizes(10, -2, 3), std::invalid_argument);
}

std::vector<size_t> ShuffledIndices(size_t n, uint32_t seed) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), size_t{0});
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

TEST(SliceFor, SlicesConcatenateToTheBatchInOrder) {
  for (size_t n : {0, 1, 2, 5, 63, 64, 65, 400}) {
    const auto batch = ShuffledIndices(n, static_cast<uint32_t>(n));
    for (int workers = 1; workers <= 6; ++workers) {
      for (int64_t b0 : {-1, 0, 1, 10, 1000}) {
        std::vector<size_t> joined;
        const auto sizes = SliceSizes(static_cast<int64_t>(n), workers, b0);
        for (int w = 0; w < workers; ++w) {
          const auto slice = SliceFor(batch, workers, w, b0);
          EXPECT_EQ(static_cast<int64_t>(slice.size()), sizes[w]);
          joined.insert(joined.end(), slice.begin(), slice.end());
        }
        EXPECT_EQ(joined, batch) << n << " " << workers << " " << b0;
      }
    }
  }
}

TEST(SliceFor, ExactSlices) {
  const std::vector<size_t> batch = {9, 8, 7, 6, 5, 4, 3};
  EXPECT_EQ(SliceFor(batch, 3, 0), (std::vector<size_t>{9, 8, 7}));
  EXPECT_EQ(SliceFor(batch, 3, 1), (std::vector<size_t>{6, 5}));
  EXPECT_EQ(SliceFor(batch, 3, 2), (std::vector<size_t>{4, 3}));
  EXPECT_EQ(SliceFor(batch, 3, 0, 1), (std::vector<size_t>{9}));
  EXPECT_EQ(SliceFor(batch, 3, 1, 1), (std::vector<size_t>{8, 7, 6}));
  EXPECT_EQ(SliceFor(batch, 3, 2, 1), (std::vector<size_t>{5, 4, 3}));
}

TEST(SliceFor, EveryTripOfAnEpochIsUsedExactlyOnce) {
  // Epoch batches as the batcher makes them: a shuffled permutation cut into batch_size chunks,
  // the last one short.
  const size_t trips = 1003, batch_size = 64;
  for (int workers : {1, 2, 3, 5, 7}) {
    for (int64_t b0 : {-1, 0, 5, 40, 64}) {
      const auto order = ShuffledIndices(trips, 17);
      std::vector<int> used(trips, 0);
      for (size_t begin = 0; begin < trips; begin += batch_size) {
        const std::vector<size_t> batch(order.begin() + begin,
                                        order.begin() + std::min(trips, begin + batch_size));
        for (int w = 0; w < workers; ++w) {
          for (size_t trip : SliceFor(batch, workers, w, b0)) ++used[trip];
        }
      }
      for (size_t t = 0; t < trips; ++t) {
        ASSERT_EQ(used[t], 1) << "trip " << t << ", " << workers << " workers, b0 " << b0;
      }
    }
  }
}

TEST(SliceFor, RejectsAWorkerOutsideTheJob) {
  const std::vector<size_t> batch = {1, 2, 3, 4};
  EXPECT_THROW(SliceFor(batch, 2, -1), std::logic_error);
  EXPECT_THROW(SliceFor(batch, 2, 2), std::logic_error);
}

TEST(SliceFor, RejectsAWorkerFarOutsideTheJobWithoutReadingOutOfBounds) {
  const std::vector<size_t> batch = {1, 2, 3, 4};
  EXPECT_THROW(SliceFor(batch, 2, 5), std::logic_error);
}

// Balanced slicing. The expected sizes were computed with the DDP baseline's Python port
// (bench/baselines/deeptte_ddp.py balanced_sizes), so both implementations are checked.
TEST(BalancedSliceSizes, EvensTheEstimatedCost) {
  EXPECT_EQ(BalancedSliceSizes({100, 90, 80, 70, 10, 9, 8, 7}, 2), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(BalancedSliceSizes(std::vector<int64_t>(64, 50), 4),
            (std::vector<int64_t>{16, 16, 16, 16}));
  EXPECT_EQ(BalancedSliceSizes({300, 20, 20, 20, 20, 20, 20, 20, 20, 20}, 3),
            (std::vector<int64_t>{1, 8, 1}));
  EXPECT_EQ(BalancedSliceSizes({5, 4}, 3), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(BalancedSliceSizes({}, 2), (std::vector<int64_t>{0, 0}));
  const std::vector<int64_t> sorted = {
      399, 398, 394, 373, 373, 367, 353, 352, 340, 338, 336, 336, 313, 298, 296, 291,
      260, 258, 247, 232, 228, 219, 216, 214, 210, 204, 203, 189, 180, 172, 168, 163,
      155, 150, 147, 147, 146, 130, 130, 127, 124, 121, 120, 113, 113, 105, 104, 104,
      101, 100, 94,  91,  87,  84,  77,  72,  56,  53,  46,  34,  31,  26,  22,  20};
  const auto sizes = BalancedSliceSizes(sorted, 4);
  EXPECT_EQ(sizes, (std::vector<int64_t>{6, 9, 14, 35}));
  // The largest part's cost is well below that of the even split's first part.
  int64_t at = 0, worst = 0;
  for (int64_t n : sizes) {
    worst = std::max(worst, sorted[at] * (n + kSliceOverhead));
    at += n;
  }
  EXPECT_LT(worst, sorted[0] * (16 + kSliceOverhead) * 3 / 4);
}

TEST(SliceFor, BalancedWithLengthsCoversTheBatchOnceAndFirstWorkerBatchWins) {
  std::vector<size_t> lengths(40);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = 10 + (i * 37) % 200;
  const std::vector<size_t> batch = {3, 17, 22, 5, 9, 31, 0, 12, 38, 27, 14};
  for (int workers : {1, 2, 3, 4}) {
    std::vector<size_t> all;
    for (int w = 0; w < workers; ++w) {
      for (size_t t : SliceFor(batch, workers, w, -1, [&](size_t i) { return lengths.at(i); }))
        all.push_back(t);
    }
    EXPECT_EQ(all, batch) << workers;
  }
  EXPECT_EQ(SliceFor(batch, 3, 0, 2, [&](size_t i) { return lengths.at(i); }),
            (std::vector<size_t>{3, 17}));
}

}  // namespace
}  // namespace tteps
