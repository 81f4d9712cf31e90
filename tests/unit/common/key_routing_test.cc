// Where a client's requests go: each server's keys, the live servers, the reader of a range,
// and ordered replicas' pushes held for the backups.
#include "common/key_routing.h"

#include <gtest/gtest.h>

#include <vector>

namespace tteps {
namespace {

// 4 servers, --replicas 2: servers 0 and 2 hold [0, 50), 1 and 3 [50, 100).
ClusterMap Replicated(Mode mode) {
  ClusterMap map;
  map.config.exchange.mode = mode;
  map.param_count = 100;
  map.servers.resize(4);
  map.ranges = {{0, 50}, {50, 100}, {0, 50}, {50, 100}};
  return map;
}

TEST(KeyRouting, EachServerGetsItsKeysOfARequest) {
  const KeyRouting routes(Replicated(Mode::kSync));
  const auto whole = routes.PerServer({});
  ASSERT_EQ(whole.size(), 4u);
  EXPECT_EQ(whole[1], (std::vector<KeyRange>{{50, 100}}));
  const auto some = routes.PerServer({{10, 20}, {40, 60}});
  EXPECT_EQ(some[0], (std::vector<KeyRange>{{10, 20}, {40, 50}}));
  EXPECT_EQ(some[3], (std::vector<KeyRange>{{50, 60}}));
}

TEST(KeyRouting, PullsReadTheFirstLiveReplicaAndPushesGoToEveryLiveServer) {
  KeyRouting routes(Replicated(Mode::kSync));
  EXPECT_TRUE(routes.Sends(MsgType::kPull, 0));
  EXPECT_FALSE(routes.Sends(MsgType::kPull, 2));  // 0 reads [0, 50)
  EXPECT_TRUE(routes.Sends(MsgType::kPush, 2));
  bool fresh = false;
  EXPECT_EQ(routes.Lose(0, &fresh), 2u);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(routes.Lose(0, &fresh), 2u);
  EXPECT_FALSE(fresh);  // lost already
  EXPECT_FALSE(routes.Sends(MsgType::kPush, 0));
  EXPECT_TRUE(routes.Sends(MsgType::kPull, 2));
  EXPECT_EQ(routes.Lose(2, &fresh), SIZE_MAX);  // no server holds [0, 50) any more
  EXPECT_FALSE(routes.PushWaitsForBackups(1));  // sync: replicas need no order
}

TEST(KeyRouting, AnOrderedPrimaryGetsAPushOnceItsLiveBackupsHoldIt) {
  KeyRouting routes(Replicated(Mode::kAsync));
  EXPECT_TRUE(routes.PushWaitsForBackups(1));   // the primary of [50, 100)
  EXPECT_FALSE(routes.PushWaitsForBackups(3));  // its backup
  bool fresh = false;
  routes.Lose(3, &fresh);
  EXPECT_FALSE(routes.PushWaitsForBackups(1));  // no live backup left to wait for
}

}  // namespace
}  // namespace tteps
