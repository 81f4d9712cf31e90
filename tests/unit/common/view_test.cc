// The membership view on the wire and as a node follows it: each change once, in order, older
// views ignored, a new map's lost servers counted afresh.
#include "common/view.h"

#include <gtest/gtest.h>

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
  const View back = DecodeCereal<View>(kView.Encode(v));
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
  // A garbled body is refused, not half-read.
  std::string text = kView.Encode(v);
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

TEST(ViewFollower, CountsANewMapsLostServersAfresh) {
  ViewFollower f;
  View v = Numbered(1);
  v.lost_servers = {1};
  EXPECT_EQ(f.Follow(v).lost_servers, (std::vector<int>{1}));
  View rollback = Numbered(2);
  rollback.map_epoch = 1;
  EXPECT_TRUE(f.Follow(rollback).lost_servers.empty());
  View again = rollback;
  again.number = 3;
  again.lost_servers = {1};  // the new map's server 1
  EXPECT_EQ(f.Follow(again).lost_servers, (std::vector<int>{1}));
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
