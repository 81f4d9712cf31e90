// Server shares that balance the bytes on each host's link.
#include "scheduler/placement.h"

#include <gtest/gtest.h>

namespace tteps::scheduler {
namespace {

TEST(LinkBalancedWeights, OneHostGivesEqualWeights) {
  EXPECT_EQ(LinkBalancedWeights({"a", "a"}, {"a", "a", "a"}), (std::vector<double>{0.5, 0.5}));
}

TEST(LinkBalancedWeights, InverseToTheWorkersOnOtherHosts) {
  // Workers: two on h1, one on h2, one on h3; servers on h1 and h2. h1's server serves two
  // workers over its link, h2's three: shares 3 : 2 put 1.2 of a model's bytes on each link
  // (an even cut puts 1.5 on h2's).
  const auto w = LinkBalancedWeights({"h1", "h2"}, {"h1", "h1", "h2", "h3"});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_DOUBLE_EQ(w[0] / w[1], 1.5);
}

TEST(LinkBalancedWeights, ServersSharingAHostShareItsWeight) {
  // Dedicated server host: every worker elsewhere, servers equal.
  EXPECT_EQ(LinkBalancedWeights({"s", "s"}, {"a", "b"}), (std::vector<double>{0.25, 0.25}));
  const auto w = LinkBalancedWeights({"h1", "h1", "h2"}, {"h1", "h2", "h2"});
  // h1: 2 workers elsewhere, two servers; h2: 1 elsewhere, one server.
  EXPECT_DOUBLE_EQ(w[0], 0.25);
  EXPECT_DOUBLE_EQ(w[1], 0.25);
  EXPECT_DOUBLE_EQ(w[2], 1.0);
}

}  // namespace
}  // namespace tteps::scheduler
