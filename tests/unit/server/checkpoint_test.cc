// Choosing where to resume: the newest version every server wrote, with the servers' ranges.
#include "server/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/checkpoint_files.h"
#include "server/optimizer.h"

namespace tteps::server {
namespace {

void Save(const std::string& dir, int id, KeyRange range, int versions) {
  OptimizerConfig sgd;
  sgd.name = "sgd";
  Shard shard(range, Consistency::kSync, 1, 0, MakeOptimizer(sgd, range.size()));
  shard.Init(std::vector<float>(range.size(), 1.f).data());
  for (int v = 0; v < versions; ++v) {
    shard.Push(0, v, 1, {range}, std::vector<float>(range.size(), 0.5f).data(), -1, false);
  }
  SaveCheckpoint(dir, id, shard);
}

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/tteps_checkpoint_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// docs/compatibility.md: a checkpoint of an older or a newer format version, or of a tteps
// before 1.0.0 (unversioned), is refused by name, also when a job resumes from it.
TEST(ShardCheckpoint, AnotherFormatVersionIsRefusedByName) {
  const std::string dir = FreshDir("format");
  Save(dir, 0, {0, 8}, 2);
  const std::string path = dir + "/" + CheckpointFileName(0, 2);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_EQ(ReadShardCheckpoint(path).format, kCheckpointFormat);
  auto refusal = [&](const std::string& b) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << b;
    try {
      ChooseResumePoint(dir, 1, 8, 1);
      return std::string("resumed");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
  };
  for (uint32_t other : {kCheckpointFormat + 1, kCheckpointFormat - 1}) {
    std::string b = bytes;
    std::memcpy(&b[sizeof(uint32_t)], &other, sizeof other);
    EXPECT_NE(
        refusal(b).find(path + " is a tteps checkpoint of format version " + std::to_string(other) +
                        "; this tteps reads version " + std::to_string(kCheckpointFormat)),
        std::string::npos)
        << refusal(b);
  }
  // A file of a tteps before 1.0.0: the old magic and no format field.
  std::string before = bytes.substr(0, sizeof(uint32_t)) + bytes.substr(2 * sizeof(uint32_t));
  std::memcpy(&before[0], &kCheckpointMagicBefore1, sizeof(uint32_t));
  EXPECT_NE(refusal(before).find("is a tteps checkpoint of format version 0;"), std::string::npos)
      << refusal(before);
  EXPECT_EQ(refusal(bytes), "resumed");
}

TEST(ChooseResumePoint, GivesTheNewestCommonVersionAndTheServersRanges) {
  const std::string dir = FreshDir("uneven");
  Save(dir, 0, {0, 6}, 3);  // ranges cut 3 : 2, as link balancing cuts them
  Save(dir, 1, {6, 10}, 3);
  Save(dir, 0, {0, 6}, 4);  // only server 0 reached version 4
  const ResumePoint p = ChooseResumePoint(dir, 2, 10);
  EXPECT_EQ(p.version, 3);
  EXPECT_EQ(p.clocks, (std::vector<int64_t>{3}));
  EXPECT_EQ(p.ranges, (std::vector<KeyRange>{{0, 6}, {6, 10}}));
  // Checkpoints of another model, or ranges that leave keys out, are refused.
  EXPECT_THROW(ChooseResumePoint(dir, 2, 11), std::runtime_error);
  const std::string gap = FreshDir("gap");
  Save(gap, 0, {0, 5}, 1);
  Save(gap, 1, {6, 10}, 1);
  EXPECT_THROW(ChooseResumePoint(gap, 2, 10), std::runtime_error);
}

// --replicas 2 with 4 servers (ranges [0, 6) and [6, 10), server s holding range s % 2): a
// lost server stops writing checkpoints, and each range is resumed from whichever replica has
// the version; a server loads its replica's file when its own is missing.
TEST(ChooseResumePoint, TakesEachRangeFromAnyOfItsReplicas) {
  const std::string dir = FreshDir("replicas");
  Save(dir, 0, {0, 6}, 2);  // server 0 was lost after version 2
  Save(dir, 2, {0, 6}, 4);
  Save(dir, 1, {6, 10}, 4);
  Save(dir, 3, {6, 10}, 3);  // server 3 was lost after version 3
  const ResumePoint p = ChooseResumePoint(dir, 4, 10, 2);
  EXPECT_EQ(p.version, 4);
  EXPECT_EQ(p.ranges, (std::vector<KeyRange>{{0, 6}, {6, 10}, {0, 6}, {6, 10}}));
  EXPECT_THROW(ChooseResumePoint(dir, 4, 10), std::runtime_error);  // not all 4 have one
  EXPECT_THROW(ChooseResumePoint(dir, 3, 10, 2), std::invalid_argument);
  OptimizerConfig sgd;
  sgd.name = "sgd";
  Shard shard({0, 6}, Consistency::kSync, 1, 0, MakeOptimizer(sgd, 6));
  EXPECT_EQ(LoadReplicaCheckpoint(dir, {0, 2}, 4, &shard), 2);
  EXPECT_EQ(shard.version(), 4);
  EXPECT_THROW(LoadReplicaCheckpoint(dir, {0, 2}, 7, &shard), std::runtime_error);
}

// A rollback's version comes from what the files hold: the first map's three servers wrote
// version 3; a rollback's two servers (ids 0 and 1 again, ranges cut anew) version 5, of which
// server 1 was lost before writing it: version 3, from the first map's files. Once both wrote
// version 5, that one; of a range held twice, the lower id's file.
TEST(ChooseRollbackPoint, TakesTheNewestVersionWhoseFilesCutTheKeysWhicheverMapWroteThem) {
  const std::string dir = FreshDir("rollback");
  Save(dir, 0, {0, 3}, 3);
  Save(dir, 1, {3, 7}, 3);
  Save(dir, 2, {7, 10}, 3);
  Save(dir, 0, {0, 5}, 5);
  ResumePoint p = ChooseRollbackPoint(dir, 10);
  EXPECT_EQ(p.version, 3);
  EXPECT_EQ(p.sources, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.ranges, (std::vector<KeyRange>{{0, 3}, {3, 7}, {7, 10}}));
  EXPECT_EQ(p.clocks, (std::vector<int64_t>{3}));
  Save(dir, 1, {5, 10}, 5);
  p = ChooseRollbackPoint(dir, 10);
  EXPECT_EQ(p.version, 5);
  EXPECT_EQ(p.sources, (std::vector<int>{0, 1}));
  Save(dir, 4, {5, 10}, 6);
  Save(dir, 3, {0, 5}, 6);
  Save(dir, 2, {0, 5}, 6);
  p = ChooseRollbackPoint(dir, 10);
  EXPECT_EQ(p.version, 6);
  EXPECT_EQ(p.sources, (std::vector<int>{2, 4}));
  EXPECT_THROW(ChooseRollbackPoint(dir, 11), std::runtime_error);  // another model's files
}

// A rollback onto other ranges: a new range is cut out of the files of the old ones, values
// and optimizer state alike, with the checkpoint's version and clocks.
TEST(LoadCheckpointRange, CutsANewRangeOutOfTheOldRangesFiles) {
  const std::string dir = FreshDir("range");
  OptimizerConfig momentum;
  momentum.name = "momentum";
  momentum.momentum = 0.5;
  momentum.lr = 0.25;  // a power of two: every value below is exact
  for (const auto& [id, range] : {std::pair<int, KeyRange>{0, {0, 4}}, {1, {4, 10}}}) {
    Shard shard(range, Consistency::kSync, 1, 0, MakeOptimizer(momentum, range.size()));
    std::vector<float> init(range.size());
    for (int64_t k = 0; k < range.size(); ++k) init[k] = static_cast<float>(range.begin + k);
    shard.Init(init.data());
    shard.Push(0, 0, 1, {range}, std::vector<float>(range.size(), 1.f).data(), -1, false);
    SaveCheckpoint(dir, id, shard);
  }
  Shard whole({2, 7}, Consistency::kSync, 1, 0, MakeOptimizer(momentum, 5));
  LoadCheckpointRange(dir, {0, 1}, 1, &whole);
  EXPECT_EQ(whole.version(), 1);
  EXPECT_EQ(whole.clock(0), 1);
  ASSERT_EQ(whole.values()->size(), 5u);
  for (int64_t k = 0; k < 5; ++k) {
    EXPECT_EQ((*whole.values())[k], static_cast<float>(2 + k) - 0.25f) << k;
  }
  const auto state = whole.optimizer().State();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].second, std::vector<float>(5, 1.f));  // the momentum buffer of each key
  Shard beyond({2, 11}, Consistency::kSync, 1, 0, MakeOptimizer(momentum, 9));
  EXPECT_THROW(LoadCheckpointRange(dir, {0, 1}, 1, &beyond), std::runtime_error);  // key 10
  EXPECT_THROW(LoadCheckpointRange(dir, {0, 1}, 2, &whole), std::runtime_error);   // no v2
}

// With AdaScale the averaged noise is part of the state: a resumed server's next gain (and
// so its next values) equals the one that went on.
TEST(SaveCheckpoint, KeepsTheAdaScaleState) {
  const std::string dir = FreshDir("adascale");
  OptimizerConfig sgd;
  sgd.name = "sgd";
  const KeyRange range{0, 3};
  const auto make = [&] {
    auto s = std::make_unique<Shard>(range, Consistency::kSync, 2, 0, MakeOptimizer(sgd, 3));
    s->set_adascale(std::make_unique<AdaScale>(2, 1.0));
    return s;
  };
  const auto step = [&](Shard& s, int v, double noise) {
    for (int w : {0, 1}) {
      s.Push(w, v, 2, {range}, std::vector<float>(3, 0.5f).data(), -1, false, {noise, 4});
    }
    s.CompleteStep(1.0);
  };
  auto ran = make();
  ran->Init(std::vector<float>(3, 1.f).data());
  step(*ran, 0, 5.0);
  SaveCheckpoint(dir, 0, *ran);
  auto resumed = make();
  LoadCheckpoint(dir, 0, 1, resumed.get());
  EXPECT_EQ(resumed->StateHash(), ran->StateHash());
  // |G|^2 0.75, S 1 at the first step; 0.25 and 3 at the second: the average of both differs
  // from the second alone.
  step(*ran, 1, 7.0);
  step(*resumed, 1, 7.0);
  EXPECT_EQ(*resumed->values(), *ran->values());
  EXPECT_EQ(resumed->lr_gain(), ran->lr_gain());
  AdaScale fresh(2, 1.0);
  PieceNoise second{14, 8};
  EXPECT_NE(ran->lr_gain(), fresh.Step(16, 4, second));
}

}  // namespace
}  // namespace tteps::server
