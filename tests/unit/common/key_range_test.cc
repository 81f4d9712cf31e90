// Key ranges: the partition of the flat parameter vector over servers, and intersections.
#include "common/key_range.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tteps {
namespace {

void ExpectContiguousBalancedPartition(int64_t total, int parts) {
  SCOPED_TRACE("total " + std::to_string(total) + ", parts " + std::to_string(parts));
  const std::vector<KeyRange> ranges = PartitionKeys(total, parts);
  ASSERT_EQ(ranges.size(), static_cast<size_t>(parts));
  int64_t expect_begin = 0, smallest = INT64_MAX, largest = 0;
  for (const KeyRange& r : ranges) {
    EXPECT_EQ(r.begin, expect_begin);
    EXPECT_GT(r.size(), 0);
    smallest = std::min(smallest, r.size());
    largest = std::max(largest, r.size());
    expect_begin = r.end;
  }
  EXPECT_EQ(expect_begin, total);
  EXPECT_LE(largest - smallest, 1);
  EXPECT_EQ(smallest, total / parts);
}

TEST(PartitionKeys, CoversAllKeysContiguouslyWithSizesWithinOne) {
  for (int64_t total : {1, 2, 3, 5, 7, 8, 10, 64, 99, 100, 1000, 4097, 710923}) {
    for (int parts = 1; parts <= 7; ++parts) {
      if (total >= parts) ExpectContiguousBalancedPartition(total, parts);
    }
  }
  for (int parts = 1; parts <= 64; ++parts) ExpectContiguousBalancedPartition(parts, parts);
  ExpectContiguousBalancedPartition((int64_t{1} << 40) + 3, 7);
}

TEST(PartitionKeys, TotalEqualToPartsGivesOneKeyEach) {
  const auto ranges = PartitionKeys(5, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ranges[i], (KeyRange{i, i + 1}));
}

TEST(PartitionKeys, DeepTteSizeOverSevenServers) {
  // 710923 = 7 * 101560 + 3: three ranges of 101561 keys and four of 101560.
  const auto ranges = PartitionKeys(710923, 7);
  std::vector<int64_t> sizes;
  for (const auto& r : ranges) sizes.push_back(r.size());
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<int64_t>{101560, 101560, 101560, 101560, 101561, 101561, 101561}));
  EXPECT_EQ(PartitionKeys(710923, 1), (std::vector<KeyRange>{{0, 710923}}));
}

TEST(PartitionKeys, RejectsInvalidArguments) {
  EXPECT_THROW(PartitionKeys(10, 0), std::invalid_argument);
  EXPECT_THROW(PartitionKeys(10, -1), std::invalid_argument);
  EXPECT_THROW(PartitionKeys(3, 4), std::invalid_argument);
  EXPECT_THROW(PartitionKeys(0, 1), std::invalid_argument);
  EXPECT_THROW(PartitionKeys(-5, 1), std::invalid_argument);
}

TEST(KeyRange, ToStringIsHalfOpenInterval) {
  EXPECT_EQ((KeyRange{3, 7}).ToString(), "[3, 7)");
  EXPECT_EQ((KeyRange{3, 7}).size(), 4);
}

TEST(Intersect, OverlappingRanges) {
  EXPECT_EQ(Intersect({0, 10}, {5, 20}), (KeyRange{5, 10}));
  EXPECT_EQ(Intersect({5, 20}, {0, 10}), (KeyRange{5, 10}));
  EXPECT_EQ(Intersect({2, 4}, {0, 10}), (KeyRange{2, 4}));   // inside
  EXPECT_EQ(Intersect({0, 10}, {2, 4}), (KeyRange{2, 4}));   // around
  EXPECT_EQ(Intersect({3, 9}, {3, 9}), (KeyRange{3, 9}));    // identical
  EXPECT_EQ(Intersect({3, 9}, {8, 100}), (KeyRange{8, 9}));  // one key
}

TEST(Intersect, DisjointOrTouchingRangesAreEmpty) {
  EXPECT_EQ(Intersect({0, 5}, {5, 10}).size(), 0);
  EXPECT_EQ(Intersect({5, 10}, {0, 5}).size(), 0);
  EXPECT_EQ(Intersect({0, 3}, {7, 10}).size(), 0);
  EXPECT_EQ(Intersect({7, 10}, {0, 3}).size(), 0);
  EXPECT_EQ(Intersect({4, 4}, {0, 10}).size(), 0);
}

TEST(Intersect, PiecesOverAPartitionRebuildTheRange) {
  const auto parts = PartitionKeys(1000, 7);
  for (const KeyRange& tensor : {KeyRange{0, 1000}, KeyRange{140, 145}, KeyRange{141, 999}}) {
    int64_t covered = 0, next = tensor.begin;
    for (const KeyRange& part : parts) {
      const KeyRange piece = Intersect(tensor, part);
      if (piece.size() == 0) continue;
      EXPECT_EQ(piece.begin, next);
      next = piece.end;
      covered += piece.size();
    }
    EXPECT_EQ(next, tensor.end);
    EXPECT_EQ(covered, tensor.size());
  }
}

TEST(PartitionKeys, LightKeysWeighNothing) {
  // keys 0..99; light: [0, 40) and [60, 70) -> 50 heavy keys: 0..39 light, 40..59 heavy,
  // 60..69 light, 70..99 heavy.
  const std::vector<KeyRange> light = {{0, 40}, {60, 70}};
  EXPECT_EQ(PartitionKeys(100, 2, light), (std::vector<KeyRange>{{0, 75}, {75, 100}}));
  EXPECT_EQ(PartitionKeys(100, 5, light),
            (std::vector<KeyRange>{{0, 50}, {50, 60}, {60, 80}, {80, 90}, {90, 100}}));
  EXPECT_EQ(PartitionKeys(100, 3, {}), PartitionKeys(100, 3));
  EXPECT_EQ(PartitionKeys(100, std::vector<double>{2, 2, 2}, light), PartitionKeys(100, 3, light));
  // Light keys at the end go with the last range.
  EXPECT_EQ(PartitionKeys(10, 2, {{6, 10}}), (std::vector<KeyRange>{{0, 3}, {3, 10}}));
  EXPECT_THROW(PartitionKeys(10, 3, {{0, 8}}), std::invalid_argument);  // 2 heavy keys
  EXPECT_THROW(PartitionKeys(10, 2, {{5, 11}}), std::invalid_argument);
}

TEST(Spans, CheckedSortedDisjointNonEmptyAndInside) {
  const KeyRange within{10, 100};
  EXPECT_EQ(CheckSpans({}, within), "");
  EXPECT_EQ(CheckSpans({{10, 12}, {12, 20}, {99, 100}}, within), "");
  EXPECT_NE(CheckSpans({{12, 12}}, within).find("empty"), std::string::npos);
  EXPECT_NE(CheckSpans({{20, 30}, {25, 40}}, within).find("overlaps"), std::string::npos);
  EXPECT_NE(CheckSpans({{20, 30}, {10, 12}}, within).find("precedes"), std::string::npos);
  EXPECT_NE(CheckSpans({{5, 12}}, within).find("precedes"), std::string::npos);
  EXPECT_NE(CheckSpans({{90, 101}}, within).find("outside [10, 100)"), std::string::npos);
  EXPECT_EQ(SpanKeys({{10, 12}, {20, 25}}), 7);
}

TEST(Spans, ClipKeepsThePartsInside) {
  EXPECT_EQ(ClipSpans({{0, 5}, {8, 12}, {14, 20}, {30, 40}}, {10, 16}),
            (std::vector<KeyRange>{{10, 12}, {14, 16}}));
  EXPECT_TRUE(ClipSpans({{0, 5}}, {5, 9}).empty());
}

TEST(Spans, GatherScatterAndAddMoveValuesBackToBack) {
  std::vector<float> flat = {0, 1, 2, 3, 4, 5, 6, 7};  // keys 100..107
  const std::vector<KeyRange> spans = {{101, 103}, {106, 107}};
  std::vector<float> packed(3);
  GatherSpans(flat.data(), 100, spans, packed.data());
  EXPECT_EQ(packed, (std::vector<float>{1, 2, 6}));
  ScatterSpans(std::vector<float>{10, 20, 60}.data(), spans, 100, flat.data());
  EXPECT_EQ(flat, (std::vector<float>{0, 10, 20, 3, 4, 5, 60, 7}));
  AddSpans(std::vector<float>{1, 1, 1}.data(), spans, 100, flat.data());
  EXPECT_EQ(flat, (std::vector<float>{0, 11, 21, 3, 4, 5, 61, 7}));
}

TEST(PartitionKeys, WeightsCutTheHeavyKeysInProportion) {
  // 50 heavy keys as above: 30 to the first range, 20 to the second.
  const std::vector<KeyRange> light = {{0, 40}, {60, 70}};
  EXPECT_EQ(PartitionKeys(100, std::vector<double>{3, 2}, light),
            (std::vector<KeyRange>{{0, 80}, {80, 100}}));
  EXPECT_EQ(PartitionKeys(10, std::vector<double>{1, 4}, {}),
            (std::vector<KeyRange>{{0, 2}, {2, 10}}));
  // Every range keeps at least one key, however small its weight.
  EXPECT_EQ(PartitionKeys(3, std::vector<double>{1e-9, 1e-9, 1}, {}),
            (std::vector<KeyRange>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(PartitionKeys(3, std::vector<double>{1, 1e-9, 1e-9}, {}),
            (std::vector<KeyRange>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_THROW(PartitionKeys(10, std::vector<double>{1, 0}, {}), std::invalid_argument);
  EXPECT_THROW(PartitionKeys(10, std::vector<double>{}, {}), std::invalid_argument);
  EXPECT_THROW(PartitionKeys(1, std::vector<double>{1, 2}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace tteps
