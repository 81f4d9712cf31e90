// The typed configuration: the mode parsed once, every part validated with the flag named, the
// whole value carried by Cereal unchanged, config.json naming every part; and the one
// evaluation schedule.
#include "common/job_config.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "common/cereal_body.h"
#include "common/eval_schedule.h"
#include "common/lr_schedule.h"
#include "common/mode.h"

namespace tteps {
namespace {

TEST(Mode, ParsedOnceByName) {
  for (Mode m :
       {Mode::kLocal, Mode::kSync, Mode::kAsync, Mode::kSsp, Mode::kRing, Mode::kAverage}) {
    EXPECT_EQ(ParseMode(ModeName(m)), m);
  }
  EXPECT_THROW(ParseMode("Sync"), std::invalid_argument);
  EXPECT_TRUE(UsesServers(Mode::kSsp));
  EXPECT_FALSE(UsesServers(Mode::kRing));
  EXPECT_FALSE(UsesServers(Mode::kLocal));
}

JobConfig Valid() {
  JobConfig c;
  c.data.train_files = {"trips.jsonl"};
  return c;
}

// Expects Validate() to throw std::invalid_argument mentioning `what`.
template <class Change>
void ExpectRefused(Change change, const std::string& what) {
  JobConfig c = Valid();
  change(c);
  try {
    c.Validate();
    ADD_FAILURE() << "accepted; expected an error about " << what;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(JobConfig, ValidateNamesTheBadFlag) {
  EXPECT_NO_THROW(Valid().Validate());
  ExpectRefused([](JobConfig& c) { c.data.train_files.clear(); }, "--train_data");
  ExpectRefused([](JobConfig& c) { c.data.split = "head"; }, "--split");
  ExpectRefused([](JobConfig& c) { c.model.pooling = "max"; }, "pooling");
  ExpectRefused([](JobConfig& c) { c.optimizer.lr = 0; }, "lr");
  ExpectRefused([](JobConfig& c) { c.train.batch_size = 0; }, "--batch_size");
  ExpectRefused([](JobConfig& c) { c.train.eval.every_s = -1; }, "--eval_every_s");
  ExpectRefused([](JobConfig& c) { c.exchange.accumulation = 0; }, "--accumulation");
  ExpectRefused([](JobConfig& c) { c.exchange.allreduce = "nccl"; }, "--allreduce");
  ExpectRefused(
      [](JobConfig& c) {
        c.exchange.mode = Mode::kRing;
        c.output.checkpoint_every = 5;
      },
      "--checkpoint_every");
  ExpectRefused(
      [](JobConfig& c) {
        c.policy.name = "ppo";
        c.exchange.accumulation = 32;
      },
      "--accumulation_max");
  ExpectRefused([](JobConfig& c) { c.policy.scope = "slice"; }, "--ppo_scope");
  ExpectRefused([](JobConfig& c) { c.cluster.timeout_s = 0; }, "--timeout_s");
  ExpectRefused([](JobConfig& c) { c.train.slowdowns = {0, -1}; }, "--slowdowns");
  ExpectRefused(
      [](JobConfig& c) {
        c.train.slowdowns = {0, 100};
        c.train.slowdown_worker = 1;
      },
      "--slowdown_worker");
  ExpectRefused(
      [](JobConfig& c) {
        c.train.slowdown_on_s = 10;
        c.train.slowdown_period_s = 10;
      },
      "--slowdown_schedule");
  ExpectRefused(
      [](JobConfig& c) {
        c.policy.name = "goodput";
        c.policy.accumulation_min = 1;
      },
      "--accumulation_min must be >= 2");
  ExpectRefused([](JobConfig& c) { c.optimizer.lr_scaling = "linear"; }, "--lr_scaling");
  ExpectRefused([](JobConfig& c) { c.optimizer.lr_scaling_workers = 0; }, "--lr_scaling_workers");
  ExpectRefused([](JobConfig& c) { c.optimizer.noise_geometry = "fisher"; }, "--noise_geometry");
  for (Mode m : {Mode::kAsync, Mode::kSsp, Mode::kAverage}) {
    ExpectRefused(
        [m](JobConfig& c) {
          c.optimizer.lr_scaling = "adascale";
          c.exchange.mode = m;
        },
        "sync, ring and local modes only");
  }
  for (Mode m : {Mode::kSync, Mode::kRing, Mode::kLocal}) {
    JobConfig c = Valid();
    c.optimizer.lr_scaling = "adascale";
    c.exchange.mode = m;
    EXPECT_NO_THROW(c.Validate()) << ModeName(m);
  }
  // Workers join parameter-server jobs only: elsewhere --min_workers would pause for nobody.
  for (Mode m : {Mode::kRing, Mode::kAverage, Mode::kLocal}) {
    ExpectRefused(
        [m](JobConfig& c) {
          c.cluster.min_workers = 2;
          c.exchange.mode = m;
        },
        "--min_workers: workers join parameter-server jobs only");
  }
  for (Mode m : {Mode::kSync, Mode::kAsync, Mode::kSsp}) {
    JobConfig c = Valid();
    c.exchange.mode = m;
    c.cluster.min_workers = 2;
    EXPECT_NO_THROW(c.Validate()) << ModeName(m);
  }
}

TEST(JobConfig, ABatchLargerThanTheTrainingSetIsRefused) {
  TrainConfig c;
  c.batch_size = 64;
  EXPECT_NO_THROW(CheckBatchFits(c, 64));
  EXPECT_NO_THROW(CheckBatchFits(c, 0));  // no training trips: said elsewhere
  c.batch_size = 100000;
  try {
    CheckBatchFits(c, 1000);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--batch_size 100000 is larger than the training set "
                                         "(1000 trips)"),
              std::string::npos)
        << e.what();
  }
}

TEST(JobConfig, SlowdownsPerWorkerOrForOne) {
  TrainConfig t;
  t.slowdown_percent = 200;
  t.slowdown_worker = 1;
  EXPECT_EQ(t.SlowdownOf(0), 0);
  EXPECT_EQ(t.SlowdownOf(1), 200);
  t.slowdown_worker = -1;
  t.slowdowns = {0, 0, 100, 200};
  EXPECT_EQ(t.SlowdownOf(2), 100);
  EXPECT_EQ(t.SlowdownOf(3), 200);
  EXPECT_EQ(t.SlowdownOf(4), 0);  // beyond the list: not slowed
}

TEST(JobConfig, CerealCarriesEveryPart) {
  JobConfig c = Valid();
  c.data.eval_file = "eval.jsonl";
  c.model.local_loss_weight = 0.25;
  c.optimizer.name = "momentum";
  c.optimizer.clip_norm = 0.5;
  c.train.eval.every_s = 3;
  c.train.slowdown_worker = 1;
  c.exchange.mode = Mode::kSsp;
  c.exchange.staleness = 4;
  c.policy.name = "ppo";
  c.policy.scope = "worker";
  c.policy.seed = 9;
  c.output.trace = "t.json";
  c.cluster.heartbeat_s = 0.5;
  const JobConfig d = DecodeCereal<JobConfig>(EncodeCereal(c));
  EXPECT_EQ(d.ToJson(), c.ToJson());
  EXPECT_EQ(d.exchange.mode, Mode::kSsp);
  EXPECT_EQ(d.model.local_loss_weight, 0.25);
  EXPECT_EQ(d.policy.seed, 9u);
  EXPECT_EQ(d.policy.scope, "worker");
  EXPECT_THROW(DecodeCereal<JobConfig>(EncodeCereal(c).substr(0, 40)), CodecError);
}

TEST(JobConfig, JsonNamesEveryPartAndTheModeByName) {
  JobConfig c = Valid();
  c.exchange.mode = Mode::kAverage;
  const std::string json = c.ToJson();
  for (const char* part :
       {"data", "model", "optimizer", "train", "exchange", "policy", "output", "cluster"}) {
    EXPECT_NE(json.find(std::string("\"") + part + "\": {"), std::string::npos) << part;
  }
  EXPECT_NE(json.find("\"mode\": \"average\""), std::string::npos) << json;
}

TEST(LearningRate, WarmupThenConstantCosineOrStep) {
  OptimizerConfig c;
  c.lr = 0.1;
  EXPECT_EQ(LearningRate(c, 0), 0.1);
  EXPECT_EQ(LearningRate(c, 1000), 0.1);
  c.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(LearningRate(c, 0), 0.025);
  EXPECT_DOUBLE_EQ(LearningRate(c, 3), 0.1);
  EXPECT_EQ(LearningRate(c, 4), 0.1);
  c.lr_schedule = "cosine";
  c.lr_steps = 14;  // 10 steps of decay after the warm-up
  EXPECT_DOUBLE_EQ(LearningRate(c, 4), 0.1);
  EXPECT_NEAR(LearningRate(c, 9), 0.05, 1e-12);
  EXPECT_NEAR(LearningRate(c, 14), 0.0, 1e-12);
  EXPECT_NEAR(LearningRate(c, 100), 0.0, 1e-12);
  c.lr_schedule = "step";
  c.lr_decay_every = 3;
  c.lr_decay = 0.5;
  EXPECT_DOUBLE_EQ(LearningRate(c, 6), 0.1);   // t = 2
  EXPECT_DOUBLE_EQ(LearningRate(c, 7), 0.05);  // t = 3
  EXPECT_DOUBLE_EQ(LearningRate(c, 10), 0.025);
  c.lr_decay_every = 0;
  EXPECT_THROW(c.Validate(), std::invalid_argument);
  c.lr_schedule = "linear";
  EXPECT_THROW(c.Validate(), std::invalid_argument);
}

TEST(EvalSchedule, EveryNStepsStaysDueUntilTaken) {
  EvalSchedule s({/*every_steps=*/4, /*every_s=*/0});
  EXPECT_FALSE(s.Due(3, 0, 0));
  EXPECT_TRUE(s.Due(4, 0, 0));
  EXPECT_TRUE(s.Due(5, 0, 0));  // not taken at 4 (say the workers did not agree): still due
  s.Taken(5, 0, 0);
  EXPECT_FALSE(s.Due(7, 0, 0));
  EXPECT_TRUE(s.Due(8, 0, 0));
  EXPECT_FALSE(s.per_epoch());
}

TEST(EvalSchedule, EverySecondsWinsOverSteps) {
  EvalSchedule s({/*every_steps=*/1, /*every_s=*/2.0});
  EXPECT_FALSE(s.Due(10, 3, 1.9));
  EXPECT_TRUE(s.Due(10, 3, 2.0));
  s.Taken(10, 3, 2.5);
  EXPECT_FALSE(s.Due(20, 3, 4.4));
  EXPECT_TRUE(s.Due(20, 3, 4.5));
}

TEST(EvalSchedule, PerEpochByDefaultAndFromTheResumePoint) {
  EvalSchedule s({});
  EXPECT_TRUE(s.per_epoch());
  EXPECT_FALSE(s.Due(15, 0, 100));
  EXPECT_TRUE(s.Due(16, 1, 0));
  s.Taken(16, 1, 0);
  EXPECT_FALSE(s.Due(20, 1, 0));
  EvalSchedule resumed({});
  resumed.StartAt(40, 2);
  EXPECT_FALSE(resumed.Due(41, 2, 0));
  EXPECT_TRUE(resumed.Due(48, 3, 0));
}

// A resume lists every flag that changes what the checkpoint means; --slices only once resolved
// (0, one per worker, is what the launcher's check sees before the workers are counted).
TEST(ResumeMismatches, ListsTheFlagsThatDifferAndSlicesOnceResolved) {
  JobConfig then, now;
  then.exchange.slices = 2;
  EXPECT_TRUE(ResumeMismatches(then, now).empty());
  now.exchange.slices = 4;
  now.model.final_fc_size = 64;
  const auto diff = ResumeMismatches(then, now);
  ASSERT_EQ(diff.size(), 2u);
  EXPECT_EQ(diff[0], "--final_fc_size 64 (the checkpoint's job: " +
                         std::to_string(then.model.final_fc_size) + ")");
  EXPECT_EQ(diff[1], "--slices 4 (the checkpoint's job: 2)");
}

}  // namespace
}  // namespace tteps
