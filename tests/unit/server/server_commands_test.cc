// The scheduler's commands to a server as one queue: arrival order, a rollback ends a take,
// a membership view as the commands for what it changed, the global norms apart by version.
#include "server/server_commands.h"

#include <gtest/gtest.h>

namespace tteps::server {
namespace {

ServerCommand Lost(int worker) {
  ServerCommand c;
  c.kind = ServerCommand::kWorkerLost;
  c.worker = worker;
  return c;
}

TEST(ServerCommands, TakesInArrivalOrderUpToTheFirstRollback) {
  ServerCommands q;
  EXPECT_TRUE(q.Take().empty());
  q.Push(Lost(1));
  ServerCommand rollback;
  rollback.kind = ServerCommand::kRollback;
  rollback.map.epoch = 3;
  q.Push(rollback);
  q.Push(Lost(2));  // of the next epoch's server
  const auto first = q.Take();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].worker, 1);
  EXPECT_EQ(first[1].kind, ServerCommand::kRollback);
  EXPECT_EQ(first[1].map.epoch, 3);
  const auto next = q.Take();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].worker, 2);
}

TEST(ServerCommands, AViewBecomesCommandsForWhatItChanged) {
  ServerCommands q;
  View v;
  v.number = 1;
  v.lost_workers = {1};
  EXPECT_TRUE(q.Follow(v));
  View next = v;
  next.number = 2;
  next.places = {{1, Place{3, 20}}};
  next.lost_servers = {0};
  EXPECT_TRUE(q.Follow(next));
  EXPECT_FALSE(q.Follow(next));  // the same view again: nothing
  const auto taken = q.Take();
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].kind, ServerCommand::kWorkerLost);
  EXPECT_EQ(taken[0].worker, 1);
  EXPECT_EQ(taken[1].kind, ServerCommand::kWorkerJoined);
  EXPECT_EQ(taken[1].slot, 1);
  EXPECT_EQ(taken[1].worker, 3);
  EXPECT_EQ(taken[1].clock, 20);
  EXPECT_EQ(taken[2].kind, ServerCommand::kServerLost);
  EXPECT_EQ(taken[2].server, 0);
}

TEST(ServerCommands, ANormIsTakenOnceAndARollbackClearsThem) {
  ServerCommands q;
  EXPECT_FALSE(q.TakeNorm(4).has_value());
  q.PutNorm(4, 2.5);
  q.PutNorm(5, 1.0);
  EXPECT_EQ(q.TakeNorm(4), 2.5);
  EXPECT_FALSE(q.TakeNorm(4).has_value());
  q.ClearNorms();
  EXPECT_FALSE(q.TakeNorm(5).has_value());
}

}  // namespace
}  // namespace tteps::server
