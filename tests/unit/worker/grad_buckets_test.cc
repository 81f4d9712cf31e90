// Gradient buckets: planned from the last tensor backwards, released strictly in order.
#include "worker/grad_buckets.h"

#include <gtest/gtest.h>

namespace tteps {
namespace {

// Tensors of 100, 300, 50, 400 and 10 floats (400, 1200, 200, 1600 and 40 bytes).
ParamLayout Layout() {
  return ParamLayout({{"a", {100}}, {"b", {3, 100}}, {"c", {50}}, {"d", {400}}, {"e", {10}}});
}

TEST(GradBuckets, BucketsRunFromTheLastTensorAndCoverTheBufferOnce) {
  const auto buckets = PlanBuckets(Layout(), 1000);
  // e + d reach 1640 bytes >= 1000: bucket 0; c + b reach 1400: bucket 1; a alone: bucket 2.
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].first_entry, 3);
  EXPECT_EQ(buckets[0].last_entry, 4);
  EXPECT_EQ(buckets[0].begin, 450);
  EXPECT_EQ(buckets[0].end, 860);
  EXPECT_EQ(buckets[1].first_entry, 1);
  EXPECT_EQ(buckets[1].last_entry, 2);
  EXPECT_EQ(buckets[1].begin, 100);
  EXPECT_EQ(buckets[1].end, 450);
  EXPECT_EQ(buckets[2].begin, 0);
  EXPECT_EQ(buckets[2].end, 100);
}

TEST(GradBuckets, NoCapMeansOneBucket) {
  const auto buckets = PlanBuckets(Layout(), 0);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].begin, 0);
  EXPECT_EQ(buckets[0].end, 860);
  EXPECT_TRUE(PlanBuckets(ParamLayout(), 1000).empty());
}

TEST(GradBuckets, TinyCapGivesEveryTensorItsOwnBucket) {
  EXPECT_EQ(PlanBuckets(Layout(), 1).size(), 5u);
}

TEST(GradBuckets, BucketsAreReleasedInOrderOnly) {
  BucketTracker t(PlanBuckets(Layout(), 1000), 5);
  // Bucket 1 (b, c) completes first, but must wait for bucket 0.
  EXPECT_TRUE(t.MarkReady(2).empty());
  EXPECT_TRUE(t.MarkReady(1).empty());
  EXPECT_TRUE(t.MarkReady(4).empty());
  EXPECT_TRUE(t.MarkReady(4).empty());  // marking twice changes nothing
  EXPECT_EQ(t.MarkReady(3), (std::vector<int>{0, 1}));
  EXPECT_TRUE(t.IsReady(3));
  EXPECT_FALSE(t.IsReady(0));
  EXPECT_EQ(t.MarkReady(0), std::vector<int>{2});
  EXPECT_TRUE(t.MarkReady(0).empty());
  t.Reset();
  EXPECT_FALSE(t.IsReady(3));
  std::vector<int> released;
  for (int e = 0; e < 5; ++e) {
    for (int b : t.MarkReady(e)) released.push_back(b);
  }
  EXPECT_EQ(released, (std::vector<int>{0, 1, 2}));
}

}  // namespace
}  // namespace tteps
