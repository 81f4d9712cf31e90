// The job's phases: forward one step at a time to done, to failed from any phase that has not
// ended, and nothing else.
#include "scheduler/job_phase.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tteps::scheduler {
namespace {

constexpr Phase kAll[] = {Phase::kRegistering, Phase::kReady, Phase::kDraining,
                          Phase::kTraining,    Phase::kDone,  Phase::kFailed};

TEST(JobPhase, TheAllowedMovesAndNoOthers) {
  int allowed = 0;
  for (Phase from : kAll) {
    for (Phase to : kAll) {
      if (CanMove(from, to)) ++allowed;
    }
  }
  // Four steps forward, and failed from each of the four phases before done.
  EXPECT_EQ(allowed, 4 + 4);
  EXPECT_TRUE(CanMove(Phase::kRegistering, Phase::kReady));
  EXPECT_TRUE(CanMove(Phase::kReady, Phase::kTraining));
  EXPECT_TRUE(CanMove(Phase::kTraining, Phase::kDraining));
  EXPECT_TRUE(CanMove(Phase::kDraining, Phase::kDone));
  EXPECT_TRUE(CanMove(Phase::kRegistering, Phase::kFailed));
  EXPECT_TRUE(CanMove(Phase::kDraining, Phase::kFailed));
  EXPECT_FALSE(CanMove(Phase::kReady, Phase::kDraining));  // no skipping
  EXPECT_FALSE(CanMove(Phase::kTraining, Phase::kReady));  // no going back
  EXPECT_FALSE(CanMove(Phase::kDone, Phase::kFailed));     // an ended job stays ended
  EXPECT_FALSE(CanMove(Phase::kFailed, Phase::kFailed));
}

TEST(JobPhase, ARunThroughAndAFailure) {
  JobPhase p;
  EXPECT_TRUE(p.is(Phase::kRegistering));
  EXPECT_FALSE(p.reached(Phase::kTraining));
  p.MoveTo(Phase::kReady);
  p.MoveTo(Phase::kTraining);
  EXPECT_TRUE(p.reached(Phase::kTraining));
  EXPECT_FALSE(p.reached(Phase::kDraining));
  EXPECT_THROW(p.MoveTo(Phase::kDone), std::logic_error);
  EXPECT_TRUE(p.is(Phase::kTraining));  // a refused move changes nothing
  p.MoveTo(Phase::kFailed);
  EXPECT_FALSE(p.reached(Phase::kRegistering));
  try {
    p.MoveTo(Phase::kDraining);
    FAIL() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "the job cannot go from failed to draining");
  }
}

}  // namespace
}  // namespace tteps::scheduler
