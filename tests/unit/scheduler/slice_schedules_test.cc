// Each slice's accumulations as the scheduler keeps them: sent to adopters and joiners, carried
// by the maps, and written beside the checkpoints for --resume.
#include "scheduler/slice_schedules.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tteps::scheduler {
namespace {

OutputConfig Checkpoints(const std::string& dir) {
  OutputConfig o;
  o.checkpoint_every = 5;
  o.checkpoint_dir = dir;
  return o;
}

TEST(SliceSchedules, ASliceWithoutChangesDrawsTheJobsAccumulation) {
  SliceSchedules s(3, 2, OutputConfig{});
  EXPECT_EQ(s.LastAccumulationOf(1), 2);
  EXPECT_EQ(SliceSchedule::Decode(s.Text(1)).changes().back().accumulation, 2);
  EXPECT_TRUE(s.Encoded().empty());
}

TEST(SliceSchedules, ChangesAreSentCarriedAndKeptBesideTheCheckpoints) {
  const std::string dir = ::testing::TempDir() + "/tteps_slice_schedules";
  std::filesystem::remove_all(dir);
  SliceSchedules s(3, 1, Checkpoints(dir));
  s.Add(2, {10, 40, 4});
  s.Add(2, {20, 120, 2});
  EXPECT_EQ(s.LastAccumulationOf(2), 2);
  EXPECT_EQ(s.LastAccumulationOf(0), 1);
  EXPECT_THROW(s.Add(2, {25, 150, 0}), std::invalid_argument);
  const auto encoded = s.Encoded();
  ASSERT_EQ(encoded.size(), 3u);
  EXPECT_TRUE(encoded[0].empty());
  EXPECT_EQ(encoded[2], s.Text(2));
  std::ifstream in(dir + "/" + kSchedulesFile);
  std::stringstream text;
  text << in.rdbuf();
  const auto kept = ParseSchedules(text.str(), kSchedulesFile);
  ASSERT_EQ(kept.count(2), 1u);
  EXPECT_EQ(kept.at(2).Encode(), s.Text(2));
  // A resumed job starts from them.
  SliceSchedules resumed(3, 1, OutputConfig{});
  resumed.Restore(kept);
  EXPECT_EQ(resumed.LastAccumulationOf(2), 2);
  // A change at an earlier step (steps trained again after a rollback) replaces the later ones.
  resumed.Add(2, {15, 80, 3});
  EXPECT_EQ(SliceSchedule::Decode(resumed.Text(2)).changes().size(), 3u);  // steps 0, 10, 15
  EXPECT_EQ(resumed.LastAccumulationOf(2), 3);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tteps::scheduler
