// Server shares that keep every host's link as light as they can.
#include "scheduler/placement.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tteps::scheduler {
namespace {

std::vector<double> Shares(const std::vector<std::string>& servers,
                           const std::vector<std::string>& workers) {
  const auto w = LinkBalancedWeights(servers, workers);
  EXPECT_EQ(w.size(), servers.size());
  EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0), 1.0, 1e-6);
  return w;
}

TEST(LinkBalancedWeights, OneHostOrDedicatedHostsGiveEqualShares) {
  const auto one = Shares({"a", "a"}, {"a", "a", "a"});
  EXPECT_NEAR(one[0], 0.5, 1e-6);
  EXPECT_NEAR(one[1], 0.5, 1e-6);
  const auto dedicated = Shares({"s", "t"}, {"a", "b", "c"});
  EXPECT_NEAR(dedicated[0], 0.5, 1e-6);
  // Two servers on one dedicated host, one on another: each host carries half.
  const auto shared = Shares({"s", "s", "t"}, {"a", "b"});
  EXPECT_NEAR(shared[0], 0.25, 1e-6);
  EXPECT_NEAR(shared[2], 0.5, 1e-6);
}

TEST(LinkBalancedWeights, SharesFollowTheWorkersOnOtherHosts) {
  // Workers: two on h1, one on h2, one on h3; servers on h1 and h2. An even cut sends 1.5
  // models' bytes out of h2 per pull (to three workers elsewhere); 3 : 2 sends 1.2 out of each
  // server host, and takes in at most 1 (h3).
  const auto w = Shares({"h1", "h2"}, {"h1", "h1", "h2", "h3"});
  EXPECT_NEAR(w[0], 0.6, 1e-6);
  EXPECT_NEAR(w[1], 0.4, 1e-6);
}

TEST(LinkBalancedWeights, IncomingBytesCountToo) {
  // h1: one worker, two servers; h2: two workers, one server. Out of h1 go 2 s1, into it
  // 1 - s1; out of h2 1 - s1, into it 2 s1: the bound 2/3 at s1 = 1/3, split over h1's two.
  const auto w = Shares({"h1", "h1", "h2"}, {"h1", "h2", "h2"});
  EXPECT_NEAR(w[0], 1.0 / 6, 1e-6);
  EXPECT_NEAR(w[1], 1.0 / 6, 1e-6);
  EXPECT_NEAR(w[2], 2.0 / 3, 1e-6);
  // Four workers on the first server's host and one elsewhere: taking in the other server's
  // share for four workers would cost more than sending to one, so h1 keeps 4/5.
  const auto v = Shares({"h1", "h2"}, {"h1", "h1", "h1", "h1", "h2"});
  EXPECT_NEAR(v[0], 0.8, 1e-6);
  EXPECT_NEAR(v[1], 0.2, 1e-6);
}

}  // namespace
}  // namespace tteps::scheduler
