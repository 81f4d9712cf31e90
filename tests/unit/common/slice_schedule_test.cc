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

// The file kept beside the checkpoints: every slice's changes, read back the same; a malformed
// line is named with its file, line and field.
TEST(SliceSchedules, WrittenAndReadBackAndMalformedLinesNamed) {
  std::map<int, SliceSchedule> schedules;
  schedules.emplace(0, SliceSchedule(4));
  schedules.at(0).Add({7, 28, 6});
  schedules.at(0).Add({10, 46, 2});
  schedules.emplace(2, SliceSchedule(3));
  const std::string text = FormatSchedules(schedules);
  const auto back = ParseSchedules(text, "s.txt");
  ASSERT_EQ(back.size(), 2u);
  for (int64_t step : {0, 5, 7, 9, 10, 40}) {
    EXPECT_EQ(back.at(0).PositionAt(step), schedules.at(0).PositionAt(step)) << step;
    EXPECT_EQ(back.at(0).AccumulationAt(step), schedules.at(0).AccumulationAt(step)) << step;
    EXPECT_EQ(back.at(2).PositionAt(step), 3 * step);
  }
  const auto refused = [](const std::string& bad, const std::string& what) {
    try {
      ParseSchedules(bad, "s.txt");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused("# c\n0 0 0 4\n0 5 x 2\n", "s.txt:3: field position");
  refused("0 0 0\n", "s.txt:1: field accumulation");
  refused("0 0 0 4 9\n", "s.txt:1: more than 4 fields");
  refused("0 3 12 4\n", "s.txt:1: a slice's first change must be at step 0");
  refused("0 0 0 4\n0 5 20 2\n0 5 20 3\n", "s.txt:3: field step does not follow");
  refused("0 0 0 4\n0 5 20 0\n", "s.txt:2: an accumulation change needs");
  refused("-1 0 0 4\n", "s.txt:1: field slice");
}

}  // namespace
}  // namespace tteps
