// The workers' membership as events and their outcomes: every sequence the failure tests reach
// by killing processes (losses, two at once, an adopter's, joins, a joiner lost before or after
// its release was asked for, rollback), in microseconds.
#include "scheduler/membership.h"

#include <gtest/gtest.h>

namespace tteps::scheduler {
namespace {

using C = MembershipCommand;

TEST(Membership, StartsWithEveryWorkerOnItsOwnSlice) {
  Membership m(Mode::kSync, 3);
  EXPECT_EQ(m.view().epoch, 0);
  EXPECT_EQ(m.view().reason, "start");
  EXPECT_EQ(m.view().live, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 1, 2}));
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(m.OwnerOf(w), w);
    EXPECT_EQ(m.OwnSliceOf(w), w);
  }
  EXPECT_EQ(m.OwnerOf(3), -1);
  EXPECT_EQ(m.OwnerOf(-1), -1);
  int slice = -1;
  EXPECT_EQ(m.JoinRefusal(&slice),
            "no slice to take over: no lost worker's slice is computed by another");
}

TEST(Membership, ALostWorkersSliceGoesToTheLiveWorkerComputingFewest) {
  Membership m(Mode::kSync, 3);
  const auto change = m.Lose(1, 17);
  EXPECT_EQ(change.adopters, (std::vector<int>{0}));
  EXPECT_EQ(change.orphaned, (std::vector<int>{1}));
  EXPECT_EQ(change.commands, (std::vector<C>{{C::kAdopt, 0, 1}}));
  EXPECT_EQ(m.view().epoch, 1);
  EXPECT_EQ(m.view().reason, "lost");
  EXPECT_EQ(m.view().from_step, 17);
  EXPECT_EQ(m.view().live, (std::vector<int>{0, 2}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 0, 2}));
  EXPECT_TRUE(m.IsLost(1));
  EXPECT_EQ(m.LiveCount(), 2);
  EXPECT_EQ(m.ActiveCount(), 2);
}

TEST(Membership, TwoLossesAtOnceSpreadTheSlices) {
  Membership m(Mode::kSync, 4);
  m.Lose(1, 5);
  const auto second = m.Lose(2, 5);
  // Worker 0 computes two slices now: worker 3 takes the second orphan.
  EXPECT_EQ(second.adopters, (std::vector<int>{3}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 0, 3, 3}));
  EXPECT_EQ(m.view().epoch, 2);
}

TEST(Membership, AnAdoptersLossMovesEverySliceItComputed) {
  Membership m(Mode::kSync, 3);
  m.Lose(1, 4);  // slice 1 -> worker 0
  const auto change = m.Lose(0, 6);
  EXPECT_EQ(change.adopters, (std::vector<int>{2, 2}));
  EXPECT_EQ(change.commands, (std::vector<C>{{C::kAdopt, 2, 0}, {C::kAdopt, 2, 1}}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(m.view().live, (std::vector<int>{2}));
}

TEST(Membership, FinishedWorkersAdoptNothing) {
  Membership m(Mode::kSync, 3);
  m.Finish(0);
  EXPECT_EQ(m.Lose(1, 9).adopters, (std::vector<int>{2}));
  m.Finish(2);
  // Nobody is left to compute: the slice's steps are done already.
  const auto last = m.Lose(2, 9);
  EXPECT_TRUE(last.adopters.empty());
  EXPECT_TRUE(last.commands.empty());
  EXPECT_EQ(m.ActiveCount(), 0);
  EXPECT_EQ(m.LiveCount(), 1);
}

TEST(Membership, AJoinerTakesAnAdoptedSliceAtTheStepItsAdopterLeavesIt) {
  Membership m(Mode::kSync, 3);
  m.Lose(1, 10);
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  EXPECT_EQ(slice, 1);
  const int joiner = m.Join(slice);
  EXPECT_EQ(joiner, 3);
  EXPECT_TRUE(m.IsJoiner(joiner));
  EXPECT_EQ(m.OwnSliceOf(joiner), 1);
  EXPECT_EQ(m.OwnerOf(1), 0);  // until the release
  // A second joiner finds the slice spoken for.
  EXPECT_NE(m.JoinRefusal(&slice), "");
  EXPECT_EQ(m.JoinerReady(joiner, 0).commands, (std::vector<C>{{C::kRelease, 0, 1}}));
  EXPECT_EQ(m.view().epoch, 1);  // no change until the slice moves
  const auto moved = m.Released(0, 1, 14);
  EXPECT_EQ(moved.commands, (std::vector<C>{{C::kGo, joiner, 1, 14}}));
  EXPECT_EQ(moved.owned, (std::vector<int>{1}));
  EXPECT_EQ(m.OwnerOf(1), joiner);
  EXPECT_EQ(m.view().epoch, 2);
  EXPECT_EQ(m.view().reason, "join");
  EXPECT_EQ(m.view().from_step, 14);
  EXPECT_EQ(m.view().live, (std::vector<int>{0, 2, 3}));
}

TEST(Membership, AJoinerLostBeforeItWasReadyLeavesTheSliceFree) {
  Membership m(Mode::kSync, 2);
  m.Lose(1, 3);
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  const int first = m.Join(slice);
  const auto lost = m.Lose(first, 0);
  EXPECT_TRUE(lost.commands.empty());  // it computed nothing
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  EXPECT_EQ(slice, 1);
  EXPECT_EQ(m.Join(slice), first + 1);  // ids are never reused
}

TEST(Membership, AJoinerLostAfterItsReleaseWasAskedForGetsTheSliceBackToItsAdopter) {
  Membership m(Mode::kSync, 2);
  m.Lose(1, 3);
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  const int joiner = m.Join(slice);
  m.JoinerReady(joiner, 0);
  m.Lose(joiner, 0);
  const auto back = m.Released(0, 1, 8);
  EXPECT_EQ(back.commands, (std::vector<C>{{C::kAdopt, 0, 1}}));
  EXPECT_TRUE(back.owned.empty());
  EXPECT_EQ(m.OwnerOf(1), 0);
}

TEST(Membership, AnAdoptersLossWhileAJoinerWaitsReleasesTheSliceAtOnce) {
  Membership m(Mode::kSync, 3);
  m.Lose(1, 3);  // slice 1 -> worker 0
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  const int joiner = m.Join(slice);
  m.JoinerReady(joiner, 0);  // worker 0 is asked to release slice 1
  const auto change = m.Lose(0, 5);
  // Worker 2 adopts both of worker 0's slices (not the joiner, which computes nothing before its
  // go) and leaves slice 1 again at once.
  EXPECT_EQ(change.commands,
            (std::vector<C>{{C::kAdopt, 2, 0}, {C::kAdopt, 2, 1}, {C::kRelease, 2, 1}}));
  EXPECT_EQ(m.Released(2, 1, 6).commands, (std::vector<C>{{C::kGo, joiner, 1, 6}}));
}

TEST(Membership, AReleaseOfASliceTheWorkerDidNotAdoptIsRefused) {
  Membership m(Mode::kSync, 3);
  EXPECT_THROW(m.Released(0, 1, 3), std::invalid_argument);  // another's
  EXPECT_THROW(m.Released(0, 7, 3), std::invalid_argument);  // none
  EXPECT_THROW(m.Released(0, 0, 3), std::invalid_argument);  // its own
  m.Lose(1, 3);
  EXPECT_THROW(m.Released(0, 0, 3), std::invalid_argument);
  EXPECT_EQ(m.OwnerOf(1), 0);
  EXPECT_EQ(m.OwnerOf(0), 0);
}

TEST(Membership, AsyncJoinersTakeALostWorkersPlace) {
  Membership m(Mode::kAsync, 3);
  const auto lost = m.Lose(1, 20);
  EXPECT_EQ(lost.orphaned, (std::vector<int>{1}));
  EXPECT_TRUE(lost.commands.empty());
  EXPECT_TRUE(m.view().slice_owner.empty());
  EXPECT_EQ(m.OwnerOf(1), 1);  // an empty place keeps its first worker's id
  int place = -1;
  ASSERT_EQ(m.JoinRefusal(&place), "");
  EXPECT_EQ(place, 1);
  const int joiner = m.Join(place);
  EXPECT_EQ(m.HoldersOf(1), (std::vector<int>{1, joiner}));
  const auto ready = m.JoinerReady(joiner, 20);
  EXPECT_EQ(ready.commands, (std::vector<C>{{C::kGo, joiner, 1, 20}}));
  EXPECT_EQ(ready.owned, (std::vector<int>{1}));
  EXPECT_EQ(m.OwnerOf(1), joiner);
  EXPECT_EQ(m.view().epoch, 2);
  EXPECT_EQ(m.JoinRefusal(&place), "no place to take: no lost worker's place is free");
  // The joiner lost in turn: its place is free again and counts as orphaned.
  EXPECT_EQ(m.Lose(joiner, 30).orphaned, (std::vector<int>{1}));
  ASSERT_EQ(m.JoinRefusal(&place), "");
  EXPECT_EQ(place, 1);
}

TEST(Membership, RingLossesMoveSlicesButJoinsAreRefused) {
  Membership m(Mode::kRing, 2);
  EXPECT_EQ(m.Lose(0, 2).adopters, (std::vector<int>{1}));
  int slice = -1;
  EXPECT_EQ(m.JoinRefusal(&slice),
            "workers join sync, async and SSP jobs only (a joiner takes a lost worker's place)");
}

TEST(Membership, ARollbackRestartsTheLiveWorkersOnly) {
  Membership m(Mode::kSync, 3);
  m.Finish(0);
  m.Finish(2);
  m.Lose(1, 4);  // nobody to adopt: everyone finished
  EXPECT_EQ(m.ActiveCount(), 0);
  m.Restart();
  EXPECT_EQ(m.ActiveCount(), 2);
  EXPECT_TRUE(m.IsLost(1));
  EXPECT_EQ(m.view().live, (std::vector<int>{0, 2}));
}

TEST(Membership, TooFewLiveWorkersPauseTheJobAndAJoinerResumesIt) {
  Membership m(Mode::kSync, 3);
  EXPECT_EQ(m.CheckQuorum(3, 0, 1.0), Membership::Quorum::kUnchanged);
  m.Lose(2, 40);
  EXPECT_EQ(m.CheckQuorum(3, 41, 10.0), Membership::Quorum::kPaused);
  EXPECT_EQ(m.view().reason, "pause");
  EXPECT_EQ(m.view().from_step, 41);
  EXPECT_TRUE(m.paused());
  EXPECT_EQ(m.CheckQuorum(3, 41, 12.0), Membership::Quorum::kUnchanged);
  EXPECT_DOUBLE_EQ(m.PausedFor(14.5), 4.5);
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  m.Join(slice);  // a registered joiner counts as live
  EXPECT_EQ(m.CheckQuorum(3, 41, 16.0), Membership::Quorum::kResumed);
  EXPECT_EQ(m.view().reason, "resume");
  EXPECT_FALSE(m.paused());
  EXPECT_DOUBLE_EQ(m.PausedFor(20.0), 0);
  EXPECT_DOUBLE_EQ(m.paused_total_s(), 6.0);
  EXPECT_EQ(m.view().epoch, 3);  // lost, pause, resume
}

}  // namespace
}  // namespace tteps::scheduler
