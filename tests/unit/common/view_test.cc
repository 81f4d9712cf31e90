// The membership view on the wire and as a node follows it: each change once, in order, older
// views ignored, a rollback's new map taken once, its lost servers counted afresh.
#include "common/view.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "common/cereal_body.h"

namespace tteps {
namespace {

View Numbered(int64_t number) {
  View v;
  v.number = number;
  v.reason = "lost";
  return v;
}

TEST(View, RoundTripsAsAControlBody) {
  View v = Numbered(7);
  v.from_step = 41;
  v.map_epoch = 2;
  v.live = {0, 2, 5};
  v.lost_workers = {1, 3};
  v.slice_owner = {0, 0, 2, 2};
  v.handover = {{1, 5}};
  v.places = {{3, Place{5, 17}}};
  v.lost_servers = {4};
  v.paused = true;
  v.pause_reason = "2 workers live";
  v.schedules = {{1, "abc"}};
  v.remap = ServerRemap();
  v.remap->epoch = 2;
  v.remap->servers.resize(2);
  v.remap->servers[1].endpoint = "tcp://10.0.0.2:5000";
  v.remap->ranges = {{0, 6}, {6, 10}};
  v.remap->resume_version = 30;
  v.remap->start_steps = {30, 30, 28};
  v.remap->resume_sources = {0, 2};
  v.remap->schedules = {"", "x"};
  const View back = DecodeCereal<View>(EncodeCereal(v));
  EXPECT_EQ(back.number, 7);
  EXPECT_EQ(back.from_step, 41);
  EXPECT_EQ(back.map_epoch, 2);
  EXPECT_EQ(back.live, v.live);
  EXPECT_EQ(back.lost_workers, v.lost_workers);
  EXPECT_EQ(back.slice_owner, v.slice_owner);
  EXPECT_EQ(back.handover, v.handover);
  EXPECT_EQ(back.places, v.places);
  EXPECT_EQ(back.lost_servers, v.lost_servers);
  EXPECT_TRUE(back.paused);
  EXPECT_EQ(back.pause_reason, v.pause_reason);
  EXPECT_EQ(back.schedules, v.schedules);
  ASSERT_TRUE(back.remap.has_value());
  EXPECT_EQ(back.remap->epoch, 2);
  EXPECT_EQ(back.remap->servers[1].endpoint, v.remap->servers[1].endpoint);
  EXPECT_EQ(back.remap->ranges, v.remap->ranges);
  EXPECT_EQ(back.remap->resume_version, 30);
  EXPECT_EQ(back.remap->start_steps, v.remap->start_steps);
  EXPECT_EQ(back.remap->resume_sources, v.remap->resume_sources);
  EXPECT_EQ(back.remap->schedules, v.remap->schedules);
  // A garbled body is refused, not half-read.
  std::string text = EncodeCereal(v);
  text.resize(text.size() / 2);
  EXPECT_THROW(DecodeCereal<View>(text), CodecError);
}

TEST(ViewFollower, SaysEachChangeOnceAndIgnoresOlderViews) {
  ViewFollower server;
  View v = Numbered(1);
  v.lost_workers = {2};
  EXPECT_EQ(server.Follow(v).lost_workers, (std::vector<int>{2}));
  EXPECT_TRUE(server.Follow(v).empty());  // the same view again
  View next = Numbered(2);
  next.lost_workers = {2, 0};
  next.paused = true;
  const ViewChanges changes = server.Follow(next);
  EXPECT_EQ(changes.lost_workers, (std::vector<int>{0}));
  EXPECT_EQ(changes.pause, ViewChanges::Pause::kPause);
  EXPECT_TRUE(server.Follow(v).empty());  // older
  View resumed = next;
  resumed.number = 3;
  resumed.paused = false;
  EXPECT_EQ(server.Follow(resumed).pause, ViewChanges::Pause::kResume);
  EXPECT_EQ(server.last().number, 3);
}

TEST(ViewFollower, TakesARollbacksMapOnceAndCountsItsLostServersAfresh) {
  ViewFollower f;
  View v = Numbered(1);
  v.lost_servers = {1};
  EXPECT_EQ(f.Follow(v).lost_servers, (std::vector<int>{1}));
  View rollback = Numbered(2);
  rollback.reason = "rollback";
  rollback.map_epoch = 1;
  rollback.remap = ServerRemap();
  rollback.remap->epoch = 1;
  rollback.remap->resume_version = 8;
  const ViewChanges rolled = f.Follow(rollback);
  ASSERT_TRUE(rolled.remap.has_value());
  EXPECT_EQ(rolled.remap->resume_version, 8);
  EXPECT_TRUE(rolled.lost_servers.empty());
  EXPECT_FALSE(rolled.empty());
  View again = rollback;
  again.number = 3;
  again.remap.reset();
  again.lost_servers = {1};  // the new map's server 1
  const ViewChanges lost = f.Follow(again);
  EXPECT_EQ(lost.lost_servers, (std::vector<int>{1}));
  EXPECT_FALSE(lost.remap.has_value());
  // The rollback's view sent again (to a joiner, with its go) changes nothing.
  rollback.number = 4;
  EXPECT_FALSE(f.Follow(rollback).remap.has_value());
}

TEST(ServerRemap, ANodesMapTakesTheNewServersAndKeepsItsOwnPlace) {
  ClusterMap old;
  old.your_id = 3;
  old.own_slice = 1;  // a joiner
  old.workers.resize(4);
  old.config.cluster.replicas = 3;
  old.servers.resize(3);
  for (int s = 0; s < 3; ++s) old.servers[s].endpoint = "tcp://h:" + std::to_string(5000 + s);
  ClusterMap scheduler = old;  // server 0 lost: 1 and 2 renumbered 0 and 1, one copy each
  scheduler.servers.erase(scheduler.servers.begin());
  scheduler.ranges = {{0, 5}, {5, 9}};
  scheduler.config.cluster.replicas = 1;
  scheduler.epoch = 1;
  scheduler.resume_version = 12;
  scheduler.start_steps = {12, 12, 11, 12};
  const ClusterMap next = Remapped(old, RemapOf(scheduler));
  EXPECT_EQ(next.your_id, 3);
  EXPECT_EQ(next.own_slice, 1);
  EXPECT_EQ(next.workers.size(), 4u);
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.servers.size(), 2u);
  EXPECT_EQ(next.ranges, scheduler.ranges);
  EXPECT_EQ(next.config.cluster.replicas, 1);
  EXPECT_EQ(next.resume_version, 12);
  EXPECT_EQ(next.start_steps, scheduler.start_steps);
  EXPECT_EQ(ServerIdIn(next, "tcp://h:5002"), 1);  // a server finds its new id
  EXPECT_THROW(ServerIdIn(next, "tcp://h:5000"), std::runtime_error);
}

TEST(ViewFollower, ANodeThatRegisteredUnderTheNewMapDoesNotRollBack) {
  // A joiner registered after the rollback: its map is already of epoch 1.
  ViewFollower joiner(4, 2, /*map_epoch=*/1);
  View rollback = Numbered(5);
  rollback.map_epoch = 1;
  rollback.remap = ServerRemap();
  rollback.remap->epoch = 1;
  EXPECT_FALSE(joiner.Follow(rollback).remap.has_value());
}

TEST(ViewFollower, AWorkerComputesTheSlicesTheViewGivesItWithTheirSchedules) {
  ViewFollower w(0, 0);
  View v = Numbered(1);
  v.slice_owner = {0, 0, 0};
  v.schedules = {{1, "s1"}};
  const ViewChanges first = w.Follow(v);
  EXPECT_EQ(first.adopt, (std::vector<std::pair<int, std::string>>{{1, "s1"}, {2, ""}}));
  EXPECT_EQ(w.held(), (std::set<int>{1, 2}));
  // Slice 2 handed over to joiner 4: left once; the joiner's view changes nothing more.
  View handover = Numbered(2);
  handover.slice_owner = {0, 0, 0};
  handover.handover = {{2, 4}};
  EXPECT_EQ(w.Follow(handover).release, (std::vector<int>{2}));
  View joined = Numbered(3);
  joined.slice_owner = {0, 0, 4};
  EXPECT_TRUE(w.Follow(joined).empty());
  EXPECT_EQ(w.held(), (std::set<int>{1}));
  // A slice the view gives to another without a handover is left too: never computed twice.
  View moved = Numbered(4);
  moved.slice_owner = {0, 3, 4};
  EXPECT_EQ(w.Follow(moved).release, (std::vector<int>{1}));
  EXPECT_TRUE(w.held().empty());
}

}  // namespace
}  // namespace tteps
