// The scheduler's commands to a server as one queue: each membership view as the commands for
// what it changed, in arrival order; a rollback's view ends a take, and what it and the views
// after it say is of the new map; the global norms apart by version.
#include "server/server_commands.h"

#include <gtest/gtest.h>

namespace tteps::server {
namespace {

TEST(ServerCommands, ARollbacksViewEndsATakeAndTheCommandsAfterItAreOfTheNewMap) {
  ServerCommands q;
  EXPECT_TRUE(q.Take().empty());
  View v;
  v.number = 1;
  v.lost_workers = {1};
  v.lost_servers = {2};
  EXPECT_TRUE(q.Follow(v));
  // Server 2 of 3 lost too: the job rolls back onto two servers, renumbered.
  View rollback = v;
  rollback.number = 2;
  rollback.reason = "rollback";
  rollback.map_epoch = 1;
  rollback.lost_servers.clear();
  rollback.remap = ServerRemap();
  rollback.remap->epoch = 1;
  rollback.remap->resume_version = 10;
  EXPECT_TRUE(q.Follow(rollback));
  View next = rollback;  // the next view no longer carries the map
  next.number = 3;
  next.remap.reset();
  next.lost_workers = {1, 0};
  next.lost_servers = {1};  // the new map's server 1
  EXPECT_TRUE(q.Follow(next));
  const auto first = q.Take();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].kind, ServerCommand::kWorkerLost);
  EXPECT_EQ(first[0].worker, 1);
  EXPECT_EQ(first[1].kind, ServerCommand::kServerLost);
  EXPECT_EQ(first[1].server, 2);
  EXPECT_EQ(first[2].kind, ServerCommand::kRollback);
  EXPECT_EQ(first[2].remap.epoch, 1);
  EXPECT_EQ(first[2].remap.resume_version, 10);
  const auto after = q.Take();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].kind, ServerCommand::kWorkerLost);
  EXPECT_EQ(after[0].worker, 0);
  EXPECT_EQ(after[1].kind, ServerCommand::kServerLost);
  EXPECT_EQ(after[1].server, 1);
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
