// A slice's data stream under a changing accumulation: positions, changes that restart the
// schedule, and the encoded form a worker receives with a lost worker's slice.
#include "common/slice_schedule.h"

#include <gtest/gtest.h>

#include "common/cereal_body.h"
#include "common/codec.h"

namespace tteps {
namespace {

TEST(SliceSchedule, PositionsFollowEveryChange) {
  SliceSchedule s(4);
  EXPECT_EQ(s.PositionAt(0), 0);
  EXPECT_EQ(s.PositionAt(10), 40);
  s.Add({10, 40, 2});  // from step 10, two micro-batches a step
  s.Add({15, 50, 8});
  EXPECT_EQ(s.PositionAt(9), 36);
  EXPECT_EQ(s.AccumulationAt(9), 4);
  EXPECT_EQ(s.PositionAt(10), 40);
  EXPECT_EQ(s.AccumulationAt(12), 2);
  EXPECT_EQ(s.PositionAt(14), 48);  // the step before the second change: drawn with 2
  EXPECT_EQ(s.PositionAt(15), 50);
  EXPECT_EQ(s.PositionAt(17), 66);
  EXPECT_EQ(s.AccumulationAt(100), 8);
}

TEST(SliceSchedule, AChangeAtOrBeforeTheLastReplacesTheLaterOnes) {
  SliceSchedule s(1);
  s.Add({10, 10, 4});
  s.Add({20, 50, 2});
  s.Add({12, 18, 8});  // a driver restarted at step 12
  ASSERT_EQ(s.changes().size(), 3u);
  EXPECT_EQ(s.PositionAt(11), 14);  // the change of step 10 stands
  EXPECT_EQ(s.PositionAt(20), 18 + 8 * 8);
  s.Add({0, 0, 2});
  ASSERT_EQ(s.changes().size(), 1u);
  EXPECT_EQ(s.PositionAt(3), 6);
  EXPECT_THROW(s.Add({5, -1, 2}), std::invalid_argument);
  EXPECT_THROW(s.Add({5, 10, 0}), std::invalid_argument);
  EXPECT_THROW(SliceSchedule(0), std::invalid_argument);
}

TEST(SliceSchedule, EncodesAndRefusesWhatCannotBeASchedule) {
  SliceSchedule s(4);
  s.Add({10, 40, 2});
  const SliceSchedule back = SliceSchedule::Decode(s.Encode());
  EXPECT_EQ(back.PositionAt(17), s.PositionAt(17));
  EXPECT_EQ(back.AccumulationAt(17), 2);
  using V = std::vector<AccumulationChange>;
  EXPECT_THROW(SliceSchedule::Decode(EncodeCereal(V{})), CodecError);
  EXPECT_THROW(SliceSchedule::Decode(EncodeCereal(V{{1, 0, 2}})), CodecError);
  EXPECT_THROW(SliceSchedule::Decode(EncodeCereal(V{{0, 0, 2}, {5, 10, 0}})), CodecError);
  EXPECT_THROW(SliceSchedule::Decode(EncodeCereal(V{{0, 0, 2}, {5, 10, 1}, {5, 12, 1}})),
               CodecError);
  EXPECT_THROW(SliceSchedule::Decode(EncodeCereal(V{{0, 0, 2}, {5, -1, 1}})), CodecError);
  // A rollback may restart the stream behind the last change's position.
  EXPECT_EQ(SliceSchedule::Decode(EncodeCereal(V{{0, 0, 2}, {5, 10, 1}, {6, 9, 1}})).PositionAt(7),
            10);
  EXPECT_THROW(SliceSchedule::Decode("garbage"), CodecError);
}

}  // namespace
}  // namespace tteps
