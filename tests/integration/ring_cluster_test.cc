// Ring-mode jobs run for real: mpirun, the workers' own ring (over TCP, or MPI), ZeroMQ to the
// scheduler, the DeepTTE model.
#include <regex>

#include "tests/integration/cluster_test_util.h"

namespace tteps {
namespace {

using namespace testing_util;

const char* kData = TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl";

std::string Common(const std::string& flags) {
  return " --train_data " + std::string(kData) + " --max_steps 20 --batch_size 64 --log_every 5 " +
         flags;
}

// Runs `mode` with `workers` workers (and 2 servers in the PS modes) into dir/name; returns the
// model path.
std::string RunJob(const std::string& dir, const std::string& name, const std::string& mode,
                   int workers, const std::string& flags) {
  const std::string launch = Launcher() + " --mode " + mode + " --workers " +
                             std::to_string(workers) + (mode == "sync" ? " --servers 2" : "") +
                             " --out_dir " + dir + "/" + name + " --";
  EXPECT_EQ(RunCommand(launch + Common(flags), 300, dir + "/" + name + ".log"), 0)
      << ReadFile(dir + "/" + name + ".log");
  const std::string summary = ReadFile(dir + "/" + name + "/summary.json");
  EXPECT_NE(summary.find("\"mode\":\"" + mode + "\""), std::string::npos) << summary;
  EXPECT_EQ(JsonNumber(summary, "steps"), 20) << summary;
  EXPECT_GT(JsonNumber(summary, "mape"), 0) << summary;
  return dir + "/" + name + "/model_last.pt";
}

std::string RunLocal(const std::string& dir, const std::string& flags) {
  EXPECT_EQ(
      RunCommand(Bin() + "/tteps-worker --mode=local --out_dir " + dir + "/local" + Common(flags),
                 300, dir + "/local.log"),
      0)
      << ReadFile(dir + "/local.log");
  return dir + "/local/model_last.pt";
}

TEST(RingCluster, RingWithMomentumEqualsLocalAndSyncTraining) {
  const std::string dir = FreshDir("ring_momentum");
  const std::string flags = "--optimizer momentum --lr 0.01";
  const std::string local = RunLocal(dir, flags);
  // Small buckets: the gradient is reduced in several pieces while backward runs.
  const std::string ring =
      RunJob(dir, "ring", "ring", 2, flags + " --bucket_mb 0.25 --check_every 5");
  const std::string sync = RunJob(dir, "sync", "sync", 2, flags);
  const double vs_local = MaxAbsDiff(local, ring), vs_sync = MaxAbsDiff(sync, ring);
  std::printf("ring vs local: %g, ring vs sync: %g\n", vs_local, vs_sync);
  EXPECT_LT(vs_local, 1e-5);
  EXPECT_LT(vs_sync, 1e-5);
  // Several buckets were used, and the workers' parameters were compared and found identical
  // at every check (steps 5, 10, 15, 20).
  const std::string log = JobLogs(dir + "/ring");
  EXPECT_TRUE(std::regex_search(log, std::regex(R"([2-9] gradient bucket\(s\) of up to 0.25 MB)")))
      << log;
  const std::string metrics = ReadFile(dir + "/ring/metrics.jsonl");
  for (int step : {5, 10, 15, 20}) {
    EXPECT_NE(metrics.find("\"ring_size\":2,\"identical_at\":" + std::to_string(step) + ","),
              std::string::npos)
        << metrics;
  }
}

// Max |diff| between local training and a ring of 2 workers with the same flags (the ring also
// `ring_flags`), after 20 steps.
double RingVersusLocal(const std::string& name, const std::string& flags,
                       const std::string& ring_flags = "") {
  const std::string dir = FreshDir(name);
  const std::string local = RunLocal(dir, flags);
  return MaxAbsDiff(local, RunJob(dir, "ring", "ring", 2, flags + ring_flags));
}

TEST(RingCluster, RingWithWarmupAndCosineScheduleEqualsLocalTraining) {
  const double diff = RingVersusLocal(
      "ring_cosine", "--optimizer momentum --lr 0.02 --lr_schedule cosine --warmup_steps 5");
  std::printf("ring vs local, warm-up + cosine: %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(RingCluster, RingWithAdaScaleEqualsLocalTraining) {
  // The slices' pieces are summed after the gradient's buckets, and every worker takes the gain
  // of the summed numbers; the local run cuts each micro-batch into the same two slices.
  const double diff =
      RingVersusLocal("ring_adascale",
                      "--optimizer momentum --lr 0.01 --accumulation 2 --first_worker_batch 40 "
                      "--lr_scaling adascale --lr_scaling_base 32 --lr_scaling_workers 2",
                      " --bucket_mb 0.25");
  std::printf("ring vs local, momentum + AdaScale: %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(RingCluster, RingWithAdamAndMpiAllreduceEqualsLocalTraining) {
  // To float rounding as Adam magnifies it (ExpectAdamRunsAgree), as in sync mode.
  const std::string dir = FreshDir("ring_adam");
  const std::string flags = "--optimizer adam --lr 0.001";
  const std::string local = RunLocal(dir, flags);
  ExpectAdamRunsAgree(local, RunJob(dir, "ring", "ring", 2, flags + " --allreduce mpi"), 0.001);
}

TEST(RingCluster, AccumulationAndUnequalSlicesMatchSyncMode) {
  // Two micro-batches per step and worker 0 taking 40 of each 64 trips: the sums are weighted
  // by trip count in both backends. With clipping, every step's norm is global.
  const std::string dir = FreshDir("ring_alpha");
  const std::string flags =
      "--optimizer momentum --lr 0.01 --accumulation 2 --first_worker_batch 40 --clip_norm 0.05";
  const std::string sync = RunJob(dir, "sync", "sync", 2, flags);
  const std::string ring = RunJob(dir, "ring", "ring", 2, flags + " --bucket_mb 0.5");
  const double diff = MaxAbsDiff(sync, ring);
  std::printf("ring vs sync, accumulation 2, clipping: %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(RingCluster, AveragingEveryStepWithPlainSgdEqualsRing) {
  // With plain SGD and equal slices, averaging the parameters after every local step is the
  // same update as averaging the gradients: p - lr (g0 + g1) / 2.
  const std::string dir = FreshDir("average1");
  const std::string flags = "--optimizer sgd --lr 0.05";
  const std::string ring = RunJob(dir, "ring", "ring", 2, flags);
  const std::string avg = RunJob(dir, "average", "average", 2, flags + " --average_every 1");
  const double diff = MaxAbsDiff(ring, avg);
  std::printf("average (k=1) vs ring, SGD: %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(RingCluster, AveragingEveryFiveStepsLearns) {
  const std::string dir = FreshDir("average5");
  const std::string cmd = Launcher() + " --mode average --workers 2 --out_dir " + dir +
                          "/run -- --train_data " + kData +
                          " --eval_fraction 0.1667 --split tail --epochs 10 --average_every 5";
  ASSERT_EQ(RunCommand(cmd, 600, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  std::printf("average k=5: %s\n", summary.c_str());
  EXPECT_EQ(JsonNumber(summary, "n"), 200) << summary;
  EXPECT_LT(JsonNumber(summary, "mape"), 0.45) << summary;
  // One evaluation per epoch, from worker 0's snapshots.
  const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
  EXPECT_GE(CountOf(metrics, "\"type\":\"eval\""), 9u) << metrics;
}

TEST(RingCluster, TimeBudgetStopsRingWorkersAfterTheSameStep) {
  // The stop votes are summed with the gradients: every worker reads the same verdict.
  const auto steps = RunOutOfTime("budget_ring", "--mode ring --workers 2");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_GT(steps[0], 0);
  EXPECT_EQ(steps[0], steps[1]);
}

TEST(RingCluster, KilledWorkerIsNamedAndTheRingOverMpiEndsNonZero) {
  // Three workers: the killed one's neighbours on both sides wait for it in the ring. The
  // scheduler names it from its silence and stops the job (MPI links cannot be rebuilt); the
  // ring does not wait it out.
  const std::string dir = FreshDir("ring_kill");
  const int timeout_s = 20;
  const auto k = KillWorkerDuringTraining(
      Launcher() + " --mode ring --workers 3 --out_dir " + dir + "/run -- --train_data " + kData +
          " --ring_transport mpi --epochs 50 --log_every 1 --heartbeat_s 0.5 --timeout_s " +
          std::to_string(timeout_s),
      dir + "/run", dir + "/log", 2, timeout_s + 30);
  ASSERT_TRUE(k.killed) << k.log;
  ASSERT_TRUE(k.ended) << "the ring job did not end after its worker was killed\n" << k.log;
  EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) != 0) << k.log;
  EXPECT_LT(k.took_s, timeout_s) << k.log;
  EXPECT_NE(k.log.find("job failed: worker 2 (rank"), std::string::npos) << k.log;
  EXPECT_NE(ReadFile(dir + "/run/summary.json").find("\"error\":\"worker 2"), std::string::npos);
  std::printf("killed ring worker named after %.1f s\n", k.took_s);
}

// Over TCP links (the default) the ring outlives a killed worker: the survivors rebuild it
// without the worker, one of them computes its slice from then on, and the step it died in is
// summed again (or handed on by a survivor that had completed it). The data order does not
// change, so the model is the undisturbed job's up to the order of the ring's sums. A worker let
// go by launch/tteps --release leaves at a step boundary, the same way without the timeout.
TEST(RingCluster, AKilledWorkerIsLeftOutOfTheRebuiltRingAndTheModelStaysTheSame) {
  // Worker 0 also sends the weights to evaluate; victim 2 is released, not killed.
  for (const int victim : {1, 0, 2}) {
    const bool release = victim == 2;
    const std::string dir = FreshDir("ring_survives_" + std::to_string(victim));
    const std::string job = Launcher() + " --mode ring --workers 3 --out_dir " + dir;
    const std::string flags = " -- --train_data " + std::string(kData) +
                              " --epochs 3 --log_every 1 --heartbeat_s 0.5 --timeout_s 20 "
                              "--optimizer momentum --lr 0.01 --check_every 5 --bucket_mb 0.5";
    ASSERT_EQ(RunCommand(job + "/plain" + flags, 300, dir + "/plain.log"), 0)
        << ReadFile(dir + "/plain.log");
    BackgroundJob run(job + "/run" + flags, dir + "/run", dir + "/log");
    ASSERT_TRUE(WaitForText(dir + "/run/metrics.jsonl", "\"step\":20,", 120)) << run.log();
    if (release) {
      EXPECT_EQ(RunCommand(Launcher() + " --out_dir " + dir + "/run --release 2", 30,
                           dir + "/release.log"),
                0)
          << ReadFile(dir + "/release.log");
    } else {
      const pid_t pid = WorkerPid(dir + "/run", victim);
      ASSERT_GT(pid, 0);
      ASSERT_EQ(kill(pid, SIGKILL), 0);
    }
    ASSERT_TRUE(run.Wait(180)) << "the job did not end\n" << run.log();
    EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
    const std::string summary = ReadFile(dir + "/run/summary.json");
    EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
    EXPECT_NE(summary.find(std::string("{\"event\":\"") + (release ? "release" : "lost") +
                           "\",\"worker\":" + std::to_string(victim)),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("\"slices_to\":["), std::string::npos) << summary;
    EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
    // The survivors' reports after the loss come from a ring of two.
    const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
    EXPECT_NE(metrics.find("\"ring_size\":2"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("\"ring_size\":3"), std::string::npos) << metrics;
    // A ring of 2 adds in another order than one of 3: a rounding-sized difference, which a
    // kink of the loss (the MAPE's absolute value, leaky ReLU) may turn into a finite one at a
    // later step. Seen: 3e-8 mostly, and 4.6e-4 in 0.2 % of the weights when the ring shrank
    // after step 22.
    const ModelDiff d = DiffModels(dir + "/plain/model_last.pt", dir + "/run/model_last.pt", 1e-5);
    std::printf(
        "ring, worker %d of 3 %s after step 20: max |diff| to the undisturbed = %g, "
        "%ld of %ld weights over 1e-5\n",
        victim, release ? "released" : "killed", d.max, static_cast<long>(d.above),
        static_cast<long>(d.elements));
    EXPECT_GT(d.elements, 0);
    EXPECT_LT(d.max, 0.02);  // twice the learning rate
    EXPECT_LE(d.above, d.elements / 100);
  }
}

}  // namespace
}  // namespace tteps
