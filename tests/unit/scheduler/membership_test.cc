// The job's membership as events and their views: every sequence the failure tests reach by
// killing processes (losses, two at once, an adopter's, joins, a loss during a join, a joiner
// lost before or after its handover, servers lost, a loss during a rollback, a stopped worker
// that speaks again), in microseconds. Where a view moves slices, the workers' own followers
// (common/view.h) say what each worker computes from it: every slice by exactly one worker.
#include "scheduler/membership.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

namespace tteps::scheduler {
namespace {

using Adopt = std::vector<std::pair<int, std::string>>;
using Ints = std::vector<int>;

// A rollback's new map (what matters here: its epoch, and where the workers start again).
ServerRemap NewMap(int epoch, std::vector<int64_t> start_steps = {}) {
  ServerRemap r;
  r.epoch = epoch;
  r.start_steps = std::move(start_steps);
  return r;
}

// Each worker's follower of the views, as worker/scheduler_commands.cc keeps one.
class Followers {
 public:
  // What `view` changes for worker `w` (its own slice: `own`, its id's by default).
  ViewChanges Of(int w, const View& view, int own = -1) {
    auto it = followers_.find(w);
    if (it == followers_.end())
      it = followers_.emplace(w, ViewFollower(w, own < 0 ? w : own)).first;
    return it->second.Follow(view);
  }

 private:
  std::map<int, ViewFollower> followers_;
};

TEST(Membership, StartsWithEveryWorkerOnItsOwnSlice) {
  Membership m(JobMode(Mode::kSync), 3);
  EXPECT_EQ(m.view().number, 0);
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

// --slices 5 on 2 workers: the slices past the workers are adopted from the start (view 1),
// each by the worker computing the fewest; the workers' followers adopt them, every slice is
// computed by exactly one worker, a loss moves them all to the survivor, and a joiner may take
// one over (the job grows).
TEST(Membership, SlicesPastTheWorkersAreAdoptedFromTheStart) {
  Membership m(JobMode(Mode::kSync), 2, 5);
  EXPECT_EQ(m.slices(), 5);
  EXPECT_EQ(m.view().number, 1);
  EXPECT_EQ(m.view().reason, "slices");
  EXPECT_EQ(m.view().from_step, 0);
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 1, 0, 1, 0}));
  EXPECT_EQ(m.OwnSliceOf(1), 1);
  Followers f;
  EXPECT_EQ(f.Of(0, m.view()).adopt, (Adopt{{2, ""}, {4, ""}}));
  EXPECT_EQ(f.Of(1, m.view()).adopt, (Adopt{{3, ""}}));
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  EXPECT_EQ(slice, 2);          // from worker 0, which computes the most
  EXPECT_EQ(m.Join(slice), 5);  // past every slice: no id is also a slice's
  const auto change = m.Lose(1, 4);
  EXPECT_EQ(change.orphaned, (Ints{1, 3}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 0, 0, 0, 0}));
  EXPECT_EQ(f.Of(0, m.view()).adopt, (Adopt{{1, ""}, {3, ""}}));
  // As many slices as workers: nothing past them, view 0 as ever.
  EXPECT_EQ(Membership(JobMode(Mode::kSync), 3, 3).view().number, 0);
  EXPECT_EQ(Membership(JobMode(Mode::kSync), 3, 0).view().slice_owner, (std::vector<int>{0, 1, 2}));
}

TEST(Membership, ALostWorkersSliceGoesToTheLiveWorkerComputingFewest) {
  Membership m(JobMode(Mode::kSync), 3);
  const auto change = m.Lose(1, 17);
  EXPECT_EQ(change.adopters, (std::vector<int>{0}));
  EXPECT_EQ(change.orphaned, (std::vector<int>{1}));
  EXPECT_EQ(m.view().number, 1);
  EXPECT_EQ(m.view().lost_workers, (std::vector<int32_t>{1}));
  EXPECT_EQ(m.view().reason, "lost");
  EXPECT_EQ(m.view().from_step, 17);
  EXPECT_EQ(m.view().live, (std::vector<int>{0, 2}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 0, 2}));
  EXPECT_TRUE(m.IsLost(1));
  EXPECT_EQ(m.LiveCount(), 2);
  EXPECT_EQ(m.ActiveCount(), 2);
}

TEST(Membership, TwoLossesAtOnceSpreadTheSlices) {
  Membership m(JobMode(Mode::kSync), 4);
  m.Lose(1, 5);
  const auto second = m.Lose(2, 5);
  // Worker 0 computes two slices now: worker 3 takes the second orphan.
  EXPECT_EQ(second.adopters, (std::vector<int>{3}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 0, 3, 3}));
  EXPECT_EQ(m.view().number, 2);
}

TEST(Membership, AnAdoptersLossMovesEverySliceItComputed) {
  Membership m(JobMode(Mode::kSync), 3);
  Followers f;
  m.Lose(1, 4);  // slice 1 -> worker 0
  EXPECT_EQ(f.Of(0, m.view()).adopt, (Adopt{{1, ""}}));
  EXPECT_TRUE(f.Of(2, m.view()).adopt.empty());
  const auto change = m.Lose(0, 6);
  EXPECT_EQ(change.adopters, (std::vector<int>{2, 2}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(m.view().live, (std::vector<int>{2}));
  const ViewChanges two = f.Of(2, m.view());
  EXPECT_EQ(two.adopt, (Adopt{{0, ""}, {1, ""}}));
  EXPECT_EQ(two.lost_workers, (Ints{0}));  // the first loss it followed before
}

TEST(Membership, FinishedWorkersAdoptNothing) {
  Membership m(JobMode(Mode::kSync), 3);
  m.Finish(0);
  EXPECT_EQ(m.Lose(1, 9).adopters, (std::vector<int>{2}));
  m.Finish(2);
  // Nobody is left to compute: the slice's steps are done already.
  const auto last = m.Lose(2, 9);
  EXPECT_TRUE(last.adopters.empty());
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 2, 2}));
  EXPECT_EQ(m.ActiveCount(), 0);
  EXPECT_EQ(m.LiveCount(), 1);
}

TEST(Membership, AJoinerTakesAnAdoptedSliceAtTheStepItsAdopterLeavesIt) {
  Membership m(JobMode(Mode::kSync), 3);
  Followers f;
  m.Lose(1, 10);
  EXPECT_EQ(f.Of(0, m.view()).adopt, (Adopt{{1, ""}}));
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
  EXPECT_TRUE(m.JoinerReady(joiner, 12).goes.empty());
  EXPECT_EQ(m.view().number, 2);
  EXPECT_EQ(m.view().reason, "handover");
  EXPECT_EQ(m.view().handover, (std::map<int32_t, int32_t>{{1, joiner}}));
  EXPECT_EQ(m.OwnerOf(1), 0);  // it still computes the slice until it leaves it
  const ViewChanges leave = f.Of(0, m.view());
  EXPECT_TRUE(leave.adopt.empty());
  EXPECT_EQ(leave.release, (Ints{1}));
  EXPECT_TRUE(f.Of(joiner, m.view(), 1).release.empty());
  const auto moved = m.Released(0, 1, 14);
  EXPECT_EQ(moved.goes, (std::vector<JoinerGo>{{joiner, 1, 14}}));
  EXPECT_EQ(moved.owned, (std::vector<int>{1}));
  EXPECT_EQ(m.OwnerOf(1), joiner);
  EXPECT_EQ(m.view().number, 3);
  EXPECT_EQ(m.view().reason, "join");
  EXPECT_EQ(m.view().from_step, 14);
  EXPECT_TRUE(m.view().handover.empty());
  EXPECT_EQ(m.view().live, (std::vector<int>{0, 2, 3}));
  // Its own slice: nothing to adopt; the adopter has nothing left to do either.
  EXPECT_TRUE(f.Of(joiner, m.view(), 1).empty());
  EXPECT_TRUE(f.Of(0, m.view()).empty());
}

TEST(Membership, AJoinerLostBeforeItWasReadyLeavesTheSliceFree) {
  Membership m(JobMode(Mode::kSync), 2);
  m.Lose(1, 3);
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  const int first = m.Join(slice);
  const auto lost = m.Lose(first, 0);
  EXPECT_TRUE(lost.adopters.empty());  // it computed nothing
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 0}));
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  EXPECT_EQ(slice, 1);
  EXPECT_EQ(m.Join(slice), first + 1);  // ids are never reused
}

// Two workers, worker 1 lost (worker 0 adopts its slice, as its follower hears), and a joiner
// for slice 1 ready at step 5 (the handover view). Returns the joiner.
int HandOverToAJoiner(Membership& m, Followers& f) {
  m.Lose(1, 3);
  f.Of(0, m.view());
  int slice = -1;
  EXPECT_EQ(m.JoinRefusal(&slice), "");
  const int joiner = m.Join(slice);
  m.JoinerReady(joiner, 5);
  return joiner;
}

TEST(Membership, AJoinerLostAfterItsHandoverGetsTheSliceBackToItsAdopter) {
  Membership m(JobMode(Mode::kSync), 2);
  Followers f;
  const int joiner = HandOverToAJoiner(m, f);
  EXPECT_EQ(f.Of(0, m.view()).release, (Ints{1}));
  m.Lose(joiner, 6);
  // The handover stands until the adopter says it left the slice: it must not compute the
  // slice again before its release took effect (both at one boundary would leave it to nobody).
  EXPECT_EQ(m.view().handover, (std::map<int32_t, int32_t>{{1, joiner}}));
  const ViewChanges lost = f.Of(0, m.view());
  EXPECT_TRUE(lost.adopt.empty());
  EXPECT_TRUE(lost.release.empty());
  const auto back = m.Released(0, 1, 8);
  EXPECT_TRUE(back.goes.empty());
  EXPECT_TRUE(back.owned.empty());
  EXPECT_EQ(m.OwnerOf(1), 0);
  EXPECT_EQ(m.view().reason, "handback");
  EXPECT_EQ(m.view().from_step, 8);
  EXPECT_TRUE(m.view().handover.empty());
  // It computes the slice again from the step after its release.
  EXPECT_EQ(f.Of(0, m.view()).adopt, (Adopt{{1, ""}}));
  // The slice can be joined for again.
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  EXPECT_EQ(slice, 1);
}

TEST(Membership, AnAdopterThatMissedTheHandoverViewStillLeavesTheSlice) {
  Membership m(JobMode(Mode::kSync), 2);
  Followers f;
  const int joiner = HandOverToAJoiner(m, f);
  const View handover = m.view();
  m.Lose(joiner, 6);
  // Views are whole, not deltas: a follower that never saw the handover view leaves the slice
  // on the next one, and an older view changes nothing afterwards.
  EXPECT_EQ(f.Of(0, m.view()).release, (Ints{1}));
  EXPECT_TRUE(f.Of(0, handover).empty());
  m.Released(0, 1, 7);
  EXPECT_EQ(f.Of(0, m.view()).adopt, (Adopt{{1, ""}}));
  EXPECT_EQ(m.OwnerOf(1), 0);
}

TEST(Membership, AnAdoptersLossWhileAJoinerWaitsHandsTheSliceOverAtOnce) {
  Membership m(JobMode(Mode::kSync), 3);
  Followers f;
  m.Lose(1, 3);  // slice 1 -> worker 0
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  const int joiner = m.Join(slice);
  m.JoinerReady(joiner, 4);  // worker 0 is asked to leave slice 1
  const ViewChanges handover = f.Of(2, m.view());
  EXPECT_TRUE(handover.adopt.empty());
  EXPECT_TRUE(handover.release.empty());
  m.Lose(0, 5);
  // Worker 2 adopts both of worker 0's slices (not the joiner, which computes nothing before its
  // go) and leaves slice 1 again at once: it computes it for no step.
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(m.view().handover, (std::map<int32_t, int32_t>{{1, joiner}}));
  const ViewChanges two = f.Of(2, m.view());
  EXPECT_EQ(two.adopt, (Adopt{{0, ""}, {1, ""}}));
  EXPECT_EQ(two.release, (Ints{1}));
  EXPECT_EQ(m.Released(2, 1, 6).goes, (std::vector<JoinerGo>{{joiner, 1, 6}}));
  EXPECT_TRUE(f.Of(2, m.view()).empty());
}

TEST(Membership, AReleaseOfASliceTheWorkerDidNotAdoptIsRefused) {
  Membership m(JobMode(Mode::kSync), 3);
  EXPECT_THROW(m.Released(0, 1, 3), std::invalid_argument);  // another's
  EXPECT_THROW(m.Released(0, 7, 3), std::invalid_argument);  // none
  EXPECT_THROW(m.Released(0, 0, 3), std::invalid_argument);  // its own
  m.Lose(1, 3);
  EXPECT_THROW(m.Released(0, 0, 3), std::invalid_argument);
  EXPECT_EQ(m.OwnerOf(1), 0);
  EXPECT_EQ(m.OwnerOf(0), 0);
}

TEST(Membership, AsyncJoinersTakeALostWorkersPlace) {
  Membership m(JobMode(Mode::kAsync), 3);
  const auto lost = m.Lose(1, 20);
  EXPECT_EQ(lost.orphaned, (std::vector<int>{1}));
  EXPECT_TRUE(lost.adopters.empty());
  EXPECT_TRUE(m.view().slice_owner.empty());
  EXPECT_EQ(m.OwnerOf(1), 1);  // an empty place keeps its first worker's id
  int place = -1;
  ASSERT_EQ(m.JoinRefusal(&place), "");
  EXPECT_EQ(place, 1);
  const int joiner = m.Join(place);
  EXPECT_EQ(m.HoldersOf(1), (std::vector<int>{1, joiner}));
  ViewFollower server;
  server.Follow(m.view());
  const auto ready = m.JoinerReady(joiner, 20);
  EXPECT_EQ(ready.goes, (std::vector<JoinerGo>{{joiner, 1, 20}}));
  // The servers count the joiner's pushes for place 1 from clock 20.
  const ViewChanges taken = server.Follow(m.view());
  ASSERT_EQ(taken.places.size(), 1u);
  EXPECT_EQ(taken.places[0].first, 1);
  EXPECT_EQ(taken.places[0].second, (Place{joiner, 20}));
  EXPECT_EQ(ready.owned, (std::vector<int>{1}));
  EXPECT_EQ(m.OwnerOf(1), joiner);
  EXPECT_EQ(m.view().number, 2);
  EXPECT_EQ(m.JoinRefusal(&place), "no place to take: no lost worker's place is free");
  // The joiner lost in turn: its place is free again and counts as orphaned.
  EXPECT_EQ(m.Lose(joiner, 30).orphaned, (std::vector<int>{1}));
  EXPECT_TRUE(m.view().places.empty());
  EXPECT_EQ(server.Follow(m.view()).lost_workers, (Ints{joiner}));
  ASSERT_EQ(m.JoinRefusal(&place), "");
  EXPECT_EQ(place, 1);
  // A second joiner for it: a place taken again.
  const int second = m.Join(place);
  m.JoinerReady(second, 33);
  const ViewChanges again = server.Follow(m.view());
  ASSERT_EQ(again.places.size(), 1u);
  EXPECT_EQ(again.places[0].second, (Place{second, 33}));
}

TEST(Membership, RingLossesMoveSlicesButJoinsAreRefused) {
  Membership m(JobMode(Mode::kRing), 2);
  EXPECT_EQ(m.Lose(0, 2).adopters, (std::vector<int>{1}));
  int slice = -1;
  EXPECT_EQ(m.JoinRefusal(&slice),
            "a ring job takes no joiner: its ring is built at the start and rebuilds only without "
            "a lost worker (sync, async and SSP jobs take joiners)");
}

TEST(Membership, ARollbackRestartsTheLiveWorkersOnly) {
  Membership m(JobMode(Mode::kSync), 3);
  m.Finish(0);
  m.Finish(2);
  m.Lose(1, 4);  // nobody to adopt: everyone finished
  EXPECT_EQ(m.ActiveCount(), 0);
  m.Rollback(NewMap(1, {2, 2, 2}), 2);
  EXPECT_EQ(m.ActiveCount(), 2);
  EXPECT_TRUE(m.IsLost(1));
  EXPECT_EQ(m.view().live, (std::vector<int>{0, 2}));
  EXPECT_EQ(m.view().reason, "rollback");
  EXPECT_EQ(m.view().from_step, 2);
  EXPECT_EQ(m.view().map_epoch, 1);
  ASSERT_TRUE(m.view().remap.has_value());
  EXPECT_EQ(m.view().remap->start_steps, (std::vector<int64_t>{2, 2, 2}));
}

TEST(Membership, ServersLostWithAReplicaAreViewsAndARollbackForgetsThem) {
  Membership m(JobMode(Mode::kSync), 2);
  ViewFollower server;
  Followers f;
  m.LoseServer(3, 7);
  EXPECT_TRUE(m.IsServerLost(3));
  EXPECT_EQ(m.view().reason, "server lost");
  EXPECT_EQ(server.Follow(m.view()).lost_servers, (Ints{3}));
  EXPECT_EQ(f.Of(0, m.view()).lost_servers, (Ints{3}));
  m.LoseServer(1, 9);  // two of four at once
  EXPECT_EQ(server.Follow(m.view()).lost_servers, (Ints{1}));
  // A server without a replica lost: the live servers renumbered, none lost in the new map.
  m.Rollback(NewMap(1), 5);
  EXPECT_FALSE(m.IsServerLost(3));
  const ViewChanges rolled = server.Follow(m.view());
  ASSERT_TRUE(rolled.remap.has_value());  // the new map, and nothing else
  EXPECT_EQ(rolled.remap->epoch, 1);
  EXPECT_TRUE(rolled.lost_servers.empty());
  EXPECT_TRUE(rolled.lost_workers.empty());
  // The new map's server 1 is another than the old map's: lost anew. Only the rollback's own
  // view carries the map.
  m.LoseServer(1, 8);
  EXPECT_FALSE(m.view().remap.has_value());
  const ViewChanges lost = server.Follow(m.view());
  EXPECT_EQ(lost.lost_servers, (Ints{1}));
  EXPECT_FALSE(lost.remap.has_value());
  EXPECT_EQ(m.view().map_epoch, 1);
}

TEST(Membership, AWorkerLostDuringARollbackHasItsSlicesMovedFromTheCheckpointsStep) {
  Membership m(JobMode(Mode::kSync), 3);
  Followers f;
  m.Lose(2, 20);  // slice 2 -> worker 0
  f.Of(0, m.view());
  f.Of(1, m.view());
  m.Rollback(NewMap(1), 10);  // every live worker trains from step 10 again, holding what it held
  const ViewChanges rolled = f.Of(0, m.view());
  EXPECT_TRUE(rolled.remap.has_value());
  EXPECT_TRUE(rolled.adopt.empty());
  EXPECT_TRUE(rolled.release.empty());
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{0, 1, 0}));
  const auto change = m.Lose(0, 10);  // silent before it reported a step of the new map
  EXPECT_EQ(change.adopters, (std::vector<int>{1, 1}));
  EXPECT_EQ(m.view().slice_owner, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(m.view().from_step, 10);
  EXPECT_EQ(f.Of(1, m.view()).adopt, (Adopt{{0, ""}, {2, ""}}));
}

TEST(Membership, AStoppedWorkerThatSpeaksAgainGetsNothingBack) {
  // SIGSTOP for longer than --silence_s: declared lost; after SIGCONT it is told to stop
  // (scheduler/coordinator.cc), and nothing it says changes the membership.
  Membership m(JobMode(Mode::kSync), 3);
  m.Lose(1, 12);
  const View lost = m.view();
  EXPECT_THROW(m.Released(1, 1, 13), std::invalid_argument);  // its own slice, now another's
  m.Finish(1);                                                // a late "done"
  EXPECT_EQ(m.view().number, lost.number);
  EXPECT_EQ(m.view().slice_owner, lost.slice_owner);
  EXPECT_TRUE(m.IsLost(1));
  // It is not taken back: a new process joins instead, with a new id.
  int slice = -1;
  ASSERT_EQ(m.JoinRefusal(&slice), "");
  EXPECT_EQ(m.Join(slice), 3);
}

TEST(Membership, TooFewLiveWorkersPauseTheJobAndAJoinerResumesIt) {
  Membership m(JobMode(Mode::kSync), 3);
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
  EXPECT_EQ(m.view().number, 3);  // lost, pause, resume
}

}  // namespace
}  // namespace tteps::scheduler
