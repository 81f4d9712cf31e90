// The scheduler's commands to a server as one queue: arrival order, a rollback ends a take,
// the global norms wait apart by version.
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
