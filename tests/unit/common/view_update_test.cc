// A view on the wire as the changes from the view a node holds: they make the view exactly, are
// a few bytes where the whole view is kilobytes, and a node that does not hold their base says
// so rather than following a wrong view.
#include "common/view_update.h"

#include <gtest/gtest.h>

#include <string>

#include "common/cereal_body.h"

namespace tteps {
namespace {

// A job of `workers` workers, `lost` of them lost, each slice computed by its own worker.
View Job(int workers, int lost) {
  View v;
  v.number = 4;
  v.reason = "lost";
  for (int w = 0; w < workers; ++w) {
    (w < lost ? v.lost_workers : v.live).push_back(w);
    v.slice_owner.push_back(w < lost ? workers - 1 : w);
  }
  for (int w = 0; w < lost; ++w) v.places[w] = Place{-1, 0};
  v.schedules = {{0, "a"}, {1, "b"}};
  v.handover = {{0, workers - 1}};
  return v;
}

void ExpectSame(const View& a, const View& b) { EXPECT_EQ(EncodeCereal(a), EncodeCereal(b)); }

TEST(ViewUpdate, TheChangesOfALossAndAJoinMakeTheViewAndAreSmall) {
  const View base = Job(1000, 3);
  // Worker 500 lost (its slice to 999), a joiner (id 1000) in worker 1's place, a schedule
  // changed, a handover done, paused.
  View next = base;
  next.number = 5;
  next.from_step = 12;
  next.reason = "join";
  next.live.erase(next.live.begin() + 497);  // worker 500
  next.lost_workers.push_back(500);
  next.live.push_back(1000);
  next.slice_owner[500] = 999;
  next.places[1] = Place{1000, 12};
  next.schedules[1] = "c";
  next.schedules.erase(0);
  next.handover.clear();
  next.paused = true;
  next.pause_reason = "too few";
  const ViewUpdate changes = ViewChangesFrom(base, next);
  EXPECT_EQ(changes.base, 4);
  ExpectSame(ApplyViewUpdate(base, changes), next);
  const size_t whole_bytes = kView.Encode(WholeView(next)).size();
  const size_t change_bytes = kView.Encode(changes).size();
  EXPECT_GT(whole_bytes, 8000u);
  EXPECT_LT(change_bytes, 400u) << "whole: " << whole_bytes;  // the same at any W
  // Through the wire.
  ExpectSame(ApplyViewUpdate(base, DecodeCereal<ViewUpdate>(kView.Encode(changes))), next);
}

TEST(ViewUpdate, ListsThatChangeOrderAndShrinkAreRebuiltExactly) {
  View base = Job(6, 0);
  View next = base;
  next.number = 5;
  next.live = {5, 0, 2};  // reordered and shrunk: the changes say more, the view is the same
  next.slice_owner = {0, 2};
  next.places.clear();
  ExpectSame(ApplyViewUpdate(base, ViewChangesFrom(base, next)), next);
  next.live = {};
  ExpectSame(ApplyViewUpdate(base, ViewChangesFrom(base, next)), next);
  // From an empty view (a job's first).
  ExpectSame(ApplyViewUpdate(View(), ViewChangesFrom(View(), next)), next);
}

TEST(ViewAssembler, FollowsWholeViewsAndChangesAndRefusesChangesFromAViewItLacks) {
  ViewAssembler node;
  const View v4 = Job(8, 1);
  View v5 = v4;
  v5.number = 5;
  v5.lost_workers.push_back(3);
  v5.live.erase(v5.live.begin() + 2);
  View v6 = v5;
  v6.number = 6;
  v6.live.push_back(8);
  // Changes before any whole view: not followed.
  EXPECT_FALSE(node.Take(ViewChangesFrom(v4, v5)).has_value());
  ExpectSame(*node.Take(WholeView(v4)), v4);
  ExpectSame(*node.Take(ViewChangesFrom(v4, v5)), v5);
  // Changes from a view it does not hold (v5's changes again, a lost message): refused.
  EXPECT_FALSE(node.Take(ViewChangesFrom(v4, v5)).has_value());
  ExpectSame(*node.Take(ViewChangesFrom(v5, v6)), v6);
  // An older whole view (sent twice) is handed on, but the node keeps the newer as its base.
  EXPECT_EQ(node.Take(WholeView(v5))->number, 5);
  View v7 = v6;
  v7.number = 7;
  ExpectSame(*node.Take(ViewChangesFrom(v6, v7)), v7);
}

}  // namespace
}  // namespace tteps
