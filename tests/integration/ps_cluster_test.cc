// Parameter-server jobs run for real: mpirun, ZeroMQ on loopback, the DeepTTE model.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include "tests/integration/cluster_test_util.h"

namespace tteps {
namespace {

using namespace testing_util;

const char* kData = TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl";

// The same 20 steps locally and in sync mode with 2 workers through 2 servers.
double SyncVersusLocal(const std::string& name, const std::string& flags) {
  const std::string dir = FreshDir(name);
  const std::string common = " --train_data " + std::string(kData) +
                             " --max_steps 20 --batch_size 64 --log_every 5 " + flags;
  EXPECT_EQ(RunCommand(Bin() + "/tteps-worker --mode=local --out_dir " + dir + "/local" + common,
                       300, dir + "/local.log"),
            0)
      << ReadFile(dir + "/local.log");
  EXPECT_EQ(RunCommand(Launcher() + " --mode sync --workers 2 --servers 2 --out_dir " + dir +
                           "/sync --" + common,
                       300, dir + "/sync.log"),
            0)
      << ReadFile(dir + "/sync.log");
  const std::string summary = ReadFile(dir + "/sync/summary.json");
  EXPECT_NE(summary.find("\"mode\":\"sync\""), std::string::npos) << summary;
  EXPECT_EQ(JsonNumber(summary, "steps"), 20);
  // With the default sparse rows a worker sends the dense tensors and the embedding rows its
  // trips used: well under the dense model (parameters x 4 bytes) per step, either way.
  const double dense = JsonNumber(summary, "parameters") * 4;
  const std::string bytes = summary.substr(summary.find("\"bytes_per_step\""));
  if (flags.find("--sparse_rows=false") == std::string::npos) {
    EXPECT_LT(JsonNumber(bytes, "push"), 0.55 * dense) << summary;
    EXPECT_LT(JsonNumber(bytes, "pull"), 0.55 * dense) << summary;
  } else {
    EXPECT_EQ(JsonNumber(bytes, "push"), dense) << summary;
  }
  return MaxAbsDiff(dir + "/local/model_last.pt", dir + "/sync/model_last.pt");
}

TEST(PsCluster, SyncWithMomentumEqualsLocalTraining) {
  const double diff = SyncVersusLocal("sync_momentum", "--optimizer momentum --lr 0.01");
  std::printf("sync vs local, SGD momentum: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(PsCluster, SyncWithDenseMessagesEqualsLocalTraining) {
  // Also the whole pull at once, as before it came module by module.
  const double diff = SyncVersusLocal(
      "sync_dense", "--optimizer momentum --lr 0.01 --sparse_rows=false --pull_overlap=false");
  std::printf("sync vs local, dense messages: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(PsCluster, SyncWithSmallPushBucketsEqualsLocalTraining) {
  // Buckets of 0.05 MB put the start-minute table into a bucket that goes as a push part during
  // backward: its rows must be this step's (found in review: they were the previous step's).
  const double diff =
      SyncVersusLocal("sync_buckets", "--optimizer momentum --lr 0.01 --push_bucket_mb 0.05");
  std::printf("sync vs local, 0.05 MB push buckets: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(PsCluster, SyncWithBatchesRunInChunksEqualsLocalTraining) {
  // 600 trips a step: local training runs them in chunks of 256 and each worker its 300 (CPU
  // batches above 256 trips); small buckets go out during the backward through the chunks.
  const double diff = SyncVersusLocal(
      "sync_chunks", "--optimizer momentum --lr 0.01 --batch_size 600 --push_bucket_mb 0.05");
  std::printf("sync vs local, 600 trips a step in chunks: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(PsCluster, SyncWithBalancedSlicesEqualsLocalTraining) {
  // Other trips per worker (cut by estimated cost), the same global batch: the same model.
  const double diff =
      SyncVersusLocal("sync_balanced", "--optimizer momentum --lr 0.01 --slicing balanced");
  std::printf("sync vs local, balanced slices: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

// --slices 4: the global batch is cut into 4 slices whatever the number of workers; each worker
// computes one or more, each slice's gradient on its own, and the servers sum them in slice
// order. On 1, 2 and 4 workers the model is the same bit for bit, and local training with
// --slices 4 (one process computing every slice, summed in slice order) is that model too.
TEST(PsCluster, SyncWithFourSlicesIsTheSameModelOnOneTwoAndFourWorkers) {
  const std::string dir = FreshDir("sync_slices");
  const std::string common = " --train_data " + std::string(kData) +
                             " --max_steps 12 --batch_size 64 --log_every 4 --slices 4 "
                             "--optimizer momentum --lr 0.01";
  ASSERT_EQ(RunCommand(Bin() + "/tteps-worker --mode=local --out_dir " + dir + "/local" + common,
                       300, dir + "/local.log"),
            0)
      << ReadFile(dir + "/local.log");
  for (const int workers : {1, 2, 4}) {
    const std::string run = dir + "/w" + std::to_string(workers);
    ASSERT_EQ(RunCommand(Launcher() + " --mode sync --servers 2 --workers " +
                             std::to_string(workers) + " --out_dir " + run + " --" + common,
                         300, run + ".log"),
              0)
        << ReadFile(run + ".log");
    const std::string summary = ReadFile(run + "/summary.json");
    EXPECT_EQ(JsonNumber(summary, "slices"), 4) << summary;
    EXPECT_EQ(JsonNumber(summary, "workers"), workers) << summary;
    EXPECT_EQ(JsonNumber(summary, "steps"), 12) << summary;
  }
  EXPECT_EQ(MaxAbsDiff(dir + "/w1/model_last.pt", dir + "/w4/model_last.pt"), 0.0);
  EXPECT_EQ(MaxAbsDiff(dir + "/w2/model_last.pt", dir + "/w4/model_last.pt"), 0.0);
  EXPECT_EQ(MaxAbsDiff(dir + "/local/model_last.pt", dir + "/w1/model_last.pt"), 0.0);
  // The same predictions to the last digit, as a user compares them.
  EXPECT_EQ(JsonNumber(ReadFile(dir + "/local/summary.json"), "mape"),
            JsonNumber(ReadFile(dir + "/w4/summary.json"), "mape"));
  // The same local job and sync job on 2 workers with `flags`: the model's max |diff|.
  const auto local_and_sync = [&](const std::string& name, const std::string& flags) {
    const std::string all =
        " --train_data " + std::string(kData) + " --max_steps 12 --batch_size 64 " + flags;
    EXPECT_EQ(
        RunCommand(Bin() + "/tteps-worker --mode=local --out_dir " + dir + "/local_" + name + all,
                   300, dir + "/local_" + name + ".log"),
        0)
        << ReadFile(dir + "/local_" + name + ".log");
    EXPECT_EQ(RunCommand(Launcher() + " --mode sync --servers 1 --workers 2 --out_dir " + dir +
                             "/w2_" + name + " --" + all,
                         300, dir + "/w2_" + name + ".log"),
              0)
        << ReadFile(dir + "/w2_" + name + ".log");
    return MaxAbsDiff(dir + "/local_" + name + "/model_last.pt",
                      dir + "/w2_" + name + "/model_last.pt");
  };
  // Also with Adam and slices cut by estimated cost, and with AdaScale, whose gain each slice's
  // gradient noise feeds (one piece per slice).
  EXPECT_EQ(local_and_sync("adam", "--slices 4 --optimizer adam --lr 0.002 --slicing balanced"),
            0.0);
  EXPECT_EQ(local_and_sync("ada", "--slices 2 --accumulation 2 --lr_scaling adascale"), 0.0);
  // Fewer slices than workers, or more in a mode that takes one per worker: refused at once.
  EXPECT_NE(RunCommand(Launcher() + " --mode sync --servers 1 --workers 2 --out_dir " + dir +
                           "/fewer -- --slices 1",
                       60, dir + "/fewer.log"),
            0);
  EXPECT_NE(ReadFile(dir + "/fewer/summary.json").find("--slices 1 is fewer than the 2 workers"),
            std::string::npos)
      << ReadFile(dir + "/fewer.log");
  EXPECT_NE(RunCommand(Launcher() + " --mode async --servers 1 --workers 2 --out_dir " + dir +
                           "/async -- --slices 4 --max_steps 2",
                       60, dir + "/async.log"),
            0);
  EXPECT_NE(ReadFile(dir + "/async/summary.json").find("needs --mode sync"), std::string::npos)
      << ReadFile(dir + "/async.log");
}

// --metrics_port: Prometheus scrapes the running job (the text exposition format): its phase,
// the step every worker completed, each worker's last report; on loopback only, and nothing
// listens once it ended.
// Each program's largest number of threads while a sync job trained, evaluating every 5 steps
// (the scheduler's evaluation thread computes too), started with OMP_NUM_THREADS=omp and
// --threads 1.
std::map<std::string, size_t> ThreadsWhileTraining(const std::string& name, int omp) {
  const std::string dir = FreshDir(name);
  BackgroundJob run("OMP_NUM_THREADS=" + std::to_string(omp) + " " + Launcher() +
                        " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                        "/run -- --train_data " + kData +
                        " --epochs 3 --threads 1 --eval_every 5 --eval_batch_size 64",
                    dir + "/run", dir + "/log");
  EXPECT_TRUE(run.WaitForTrainReports(2, 120)) << run.log();
  std::map<std::string, size_t> most;
  // Until the job ends: the pools OpenMP starts in a thread's first parallel region stay.
  for (int i = 0; i < 400 && !ProgramPids("", dir + "/run").empty(); ++i) {
    for (pid_t pid : ProgramPids("", dir + "/run")) {
      std::string comm = ReadFile("/proc/" + std::to_string(pid) + "/comm");
      if (!comm.empty() && comm.back() == '\n') comm.pop_back();
      size_t threads = 0;
      std::error_code ec;
      for (auto it =
               std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
           !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        ++threads;
      }
      most[comm] = std::max(most[comm], threads);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(run.Wait(120)) << run.log();
  EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
  for (const auto& [program, threads] : most) {
    std::printf("OMP_NUM_THREADS=%d: %s at most %zu threads\n", omp, program.c_str(), threads);
  }
  return most;
}

TEST(PsCluster, EveryProcessComputesWithItsThreadsWhateverOpenMpIsTold) {
  // --threads 1 everywhere: OMP_NUM_THREADS=6 must not start a single OpenMP thread more in any
  // process (a program or thread that computes without taking --threads starts a pool of 5:
  // a worker without it had 12 threads instead of 7), so each program has as many threads as
  // with OMP_NUM_THREADS=1.
  const auto one = ThreadsWhileTraining("threads_omp1", 1);
  const auto six = ThreadsWhileTraining("threads_omp6", 6);
  for (const std::string program : {"tteps-scheduler", "tteps-server", "tteps-worker"}) {
    ASSERT_TRUE(one.count(program) && six.count(program)) << program;
    EXPECT_EQ(six.at(program), one.at(program)) << program;
  }
}

TEST(PsCluster, PrometheusScrapesTheRunningJob) {
#if !TTEPS_HAS_HTTPLIB
  GTEST_SKIP() << "built without cpp-httplib (libcpp-httplib-dev): no --metrics_port";
#endif
  const std::string dir = FreshDir("prometheus");
  const int port = FreePort();
  ASSERT_GT(port, 0);
  BackgroundJob run(Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                        "/run -- --train_data " + kData +
                        " --epochs 100 --max_steps 300 --log_every 2 --metrics_port " +
                        std::to_string(port),
                    dir + "/run", dir + "/log");
  ASSERT_TRUE(WaitForText(dir + "/run/metrics.jsonl", "\"step\":20,", 120)) << run.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // published every 500 ms
  const std::string text = HttpGet(port, "/metrics");
  EXPECT_NE(text.find("# TYPE tteps_step gauge\ntteps_step "), std::string::npos) << text;
  EXPECT_NE(text.find("tteps_job_phase{mode=\"sync\",phase=\"training\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tteps_workers{state=\"live\"} 2\n"), std::string::npos) << text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\ntteps_step (\d+)\n)"))) << text;
  EXPECT_GE(std::stoi(m[1]), 18) << text;
  for (const std::string worker : {"0", "1"}) {
    EXPECT_NE(text.find("tteps_worker_step{worker=\"" + worker + "\"} "), std::string::npos)
        << text;
    EXPECT_NE(text.find("tteps_worker_staleness{worker=\"" + worker + "\"} "), std::string::npos);
  }
  // Loopback only: not on the host's other addresses.
  if (const std::string other = NonLoopbackAddress(); !other.empty()) {
    EXPECT_EQ(HttpGet(port, "/metrics", other), "") << "served on " << other;
  }
  ASSERT_TRUE(run.Wait(240)) << run.log();
  EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
  EXPECT_EQ(HttpGet(port, "/metrics"), "");
}

TEST(PsCluster, PullOverlapTrainsTheSameModelBitForBit) {
  // The forward of each micro-batch (two per step) awaits the modules still arriving; worker 1,
  // whose slices are empty (worker 0 takes all 64 trips), runs no forward and takes the whole
  // pull before its next push. Either way the weights are those of the whole pull.
  const std::string dir = FreshDir("pull_overlap");
  const std::string common = " --train_data " + std::string(kData) +
                             " --max_steps 12 --batch_size 64 --log_every 3 --accumulation 2 "
                             "--first_worker_batch 64 --optimizer momentum --lr 0.01";
  for (const std::string run : {"on", "off"}) {
    EXPECT_EQ(
        RunCommand(Launcher() + " --mode sync --workers 2 --servers 2 --out_dir " + dir + "/" +
                       run + " --" + common + " --pull_overlap=" + (run == "on" ? "true" : "false"),
                   300, dir + "/" + run + ".log"),
        0)
        << ReadFile(dir + "/" + run + ".log");
  }
  EXPECT_EQ(MaxAbsDiff(dir + "/on/model_last.pt", dir + "/off/model_last.pt"), 0.0);
  // Time spent awaiting weights is the pull's, not compute: never a negative compute time.
  const std::string metrics = ReadFile(dir + "/on/metrics.jsonl");
  const std::regex compute("\"compute_s\":(-?[0-9.e+-]+)");
  int records = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), compute);
       it != std::sregex_iterator(); ++it, ++records) {
    EXPECT_GE(std::stod((*it)[1]), 0.0) << it->str();
  }
  EXPECT_GE(records, 8);  // 4 windows x 2 workers
}

TEST(PsCluster, KeepBestSavesTheBestEvaluatedWeightsAsModelPt) {
  // Evaluations every 3 steps of the servers' weights; a learning rate high enough that the
  // MAPE goes up as well as down. model.pt must evaluate to the lowest MAPE of the run (as
  // summary.json's best_eval says), model_last.pt to the final evaluation.
  const std::string dir = FreshDir("keep_best");
  // 100 trips, so that an evaluation is done before the next is due (one asked for while
  // another runs is dropped).
  const std::string eval = dir + "/eval.jsonl";
  ASSERT_EQ(std::system(("tail -n 100 " + std::string(kData) + " > " + eval).c_str()), 0);
  ASSERT_EQ(RunCommand(Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                           "/run -- --train_data " + kData + " --eval_data " + eval +
                           " --max_steps 24 --batch_size 64 --log_every 1 --eval_every 3 --lr 0.01",
                       300, dir + "/run.log"),
            0)
      << ReadFile(dir + "/run.log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  const auto at = summary.find("\"best_eval\":{");
  ASSERT_NE(at, std::string::npos) << summary;
  const std::string best = summary.substr(at, summary.find('}', at) - at);
  const std::string final_eval = summary.substr(summary.find("\"final_eval\":{"));
  // The lowest MAPE of the evaluations the run logged.
  const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
  const std::regex mape("\"eval\":\\{\"mape\":([0-9.e+-]+)");
  double lowest = 1e300;
  int evals = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), mape);
       it != std::sregex_iterator(); ++it, ++evals) {
    lowest = std::min(lowest, std::stod((*it)[1]));
  }
  EXPECT_GE(evals, 2);
  EXPECT_EQ(JsonNumber(best, "mape"), lowest) << best;
  for (const auto& [file, want] :
       {std::pair<std::string, std::string>{"model.pt", best},
        std::pair<std::string, std::string>{"model_last.pt", final_eval}}) {
    ASSERT_EQ(RunCommand(Bin() + "/tteps-eval --model " + dir + "/run/" + file + " --data " + eval,
                         120, dir + "/" + file + ".eval"),
              0)
        << ReadFile(dir + "/" + file + ".eval");
    const std::string got = ReadFile(dir + "/" + file + ".eval");
    EXPECT_EQ(JsonNumber(got, "mape"), JsonNumber(want, "mape")) << file << ": " << got;
  }
}

TEST(PsCluster, SyncWithWarmupAndCosineScheduleEqualsLocalTraining) {
  // The servers step with the rate of their version, the local optimizer with that of its
  // step count: one function, so the same rates (cosine over the 20 planned steps).
  const double diff = SyncVersusLocal(
      "sync_cosine", "--optimizer momentum --lr 0.02 --lr_schedule cosine --warmup_steps 5");
  std::printf("sync vs local, warm-up + cosine: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(PsCluster, SyncWithAdamAndStepScheduleEqualsLocalTraining) {
  const double diff =
      SyncVersusLocal("sync_step",
                      "--optimizer adam --lr 0.002 --lr_schedule step --lr_decay_every 6 "
                      "--lr_decay 0.5 --warmup_steps 3");
  std::printf("sync vs local, Adam + warm-up + step decay: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-4);  // Adam's tolerance, as below
}

TEST(PsCluster, SyncWithClippingEqualsLocalTraining) {
  // The global norm of each aggregate is gathered from both shards through the scheduler; the
  // local run clips with torch::nn::utils::clip_grad_norm_. A norm of 0.05 clips every step.
  // Worker 0 takes 40 trips of each batch of 64 (slicing rule): unequal sample counts.
  const double diff = SyncVersusLocal(
      "sync_clip", "--optimizer momentum --lr 0.01 --clip_norm 0.05 --first_worker_batch 40");
  std::printf("sync vs local, momentum + clipping: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

TEST(PsCluster, SyncWithAdaScaleEqualsLocalTraining) {
  // The servers fold the slices' pieces (2 micro-batches of each worker's slice, 40 and 24
  // trips) with the global norm gathered through the scheduler; the local run cuts each
  // micro-batch into the same two slices (--lr_scaling_workers 2). Against a base batch of 32,
  // the step of 128 trips may take up to 4 times the rate.
  const std::string flags =
      "--optimizer momentum --lr 0.01 --accumulation 2 --first_worker_batch 40 "
      "--lr_scaling adascale --lr_scaling_base 32 --lr_scaling_workers 2";
  const double diff = SyncVersusLocal("sync_adascale", flags);
  std::printf("sync vs local, momentum + AdaScale: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
  // The servers say which gains they took: above 1, at most the scale of 4.
  const std::string summary =
      ReadFile(::testing::TempDir() + "/tteps_it_sync_adascale/sync/summary.json");
  const size_t at = summary.find("\"lr_gain\"");
  ASSERT_NE(at, std::string::npos) << summary;
  const std::string gain = summary.substr(at);
  std::printf("servers' gain: mean %g, min %g, max %g over %g steps\n", JsonNumber(gain, "mean"),
              JsonNumber(gain, "min"), JsonNumber(gain, "max"), JsonNumber(gain, "steps"));
  EXPECT_EQ(JsonNumber(gain, "steps"), 20);
  EXPECT_GT(JsonNumber(gain, "mean"), 1.05);
  EXPECT_LE(JsonNumber(gain, "max"), 4.0);
  // And the gain changed the model: the same local run without it ends elsewhere.
  const std::string dir = FreshDir("local_unscaled");
  std::string unscaled = flags.substr(0, flags.find(" --lr_scaling"));
  ASSERT_EQ(RunCommand(Bin() + "/tteps-worker --mode=local --out_dir " + dir + " --train_data " +
                           kData + " --max_steps 20 --batch_size 64 --log_every 5 " + unscaled,
                       300, dir + ".log"),
            0)
      << ReadFile(dir + ".log");
  const double moved = MaxAbsDiff(
      dir + "/model_last.pt", ::testing::TempDir() + "/tteps_it_sync_adascale/local/model_last.pt");
  std::printf("local with AdaScale vs without: max |diff| = %g\n", moved);
  EXPECT_GT(moved, 100 * std::max(diff, 1e-6));
}

TEST(PsCluster, SyncWithAdamEqualsLocalTraining) {
  // To float rounding as Adam magnifies it (ExpectAdamRunsAgree).
  SyncVersusLocal("sync_adam", "--optimizer adam --lr 0.001");
  const std::string dir = ::testing::TempDir() + "/tteps_it_sync_adam";
  ExpectAdamRunsAgree(dir + "/local/model_last.pt", dir + "/sync/model_last.pt", 0.001);
}

}  // namespace
}  // namespace tteps

namespace tteps {
namespace {

using namespace testing_util;

// Trains 10 epochs on the first 1,000 sample trips and returns the eval MAPE on the other 200.
double TenEpochMape(const std::string& name, const std::string& launch_flags,
                    const std::string& train_flags) {
  const std::string dir = FreshDir(name);
  const std::string cmd = Launcher() + " " + launch_flags + " --out_dir " + dir + "/run -- " +
                          "--train_data " + kData + " --eval_fraction 0.1667 --split tail " +
                          "--epochs 10 --batch_size 64 " + train_flags;
  EXPECT_EQ(RunCommand(cmd, 600, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  std::printf("%s: %s\n", name.c_str(), summary.c_str());
  EXPECT_EQ(JsonNumber(summary, "n"), 200) << summary;
  return JsonNumber(summary, "mape");
}

TEST(PsCluster, AsyncWithClippingAcceptsAWorkersEmptySlices) {
  // Worker 0 takes every trip of each batch (slicing rule): worker 1 pushes empty gradients,
  // whose norm the clipping servers must accept.
  const std::string dir = FreshDir("async_clip_empty");
  const std::string cmd = Launcher() + " --mode async --workers 2 --servers 1 --out_dir " + dir +
                          "/run -- --train_data " + kData +
                          " --max_steps 10 --clip_norm 0.05 --first_worker_batch 64";
  ASSERT_EQ(RunCommand(cmd, 120, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_EQ(JsonNumber(summary, "steps"), 10) << summary;
  EXPECT_EQ(JsonNumber(summary, "errors"), 0) << summary;
}

TEST(PsCluster, AsyncWithThreeWorkersReachesMapeBelowPoint45) {
  const double mape = TenEpochMape("async3", "--mode async --workers 3 --servers 1", "");
  EXPECT_LT(mape, 0.45);
}

TEST(PsCluster, SspWithStalenessOneReachesMapeBelowPoint45) {
  const double mape = TenEpochMape("ssp1", "--mode ssp --workers 3 --servers 2", "--staleness 1");
  EXPECT_LT(mape, 0.45);
}

// A job that cannot go on (here: its only worker is gone) fails at once, naming the worker.
TEST(PsCluster, KilledLastWorkerIsNamedAndTheJobEndsNonZero) {
  const std::string dir = FreshDir("kill");
  const int timeout_s = 20;
  const auto k = KillWorkerDuringTraining(
      Launcher() + " --mode sync --workers 1 --servers 1 --out_dir " + dir +
          "/run -- --train_data " + kData + " --epochs 50 --log_every 1 --heartbeat_s 0.5 " +
          "--timeout_s " + std::to_string(timeout_s),
      dir + "/run", dir + "/log", 0, timeout_s + 30);
  ASSERT_TRUE(k.killed) << k.log;
  ASSERT_TRUE(k.ended) << "the job did not end after its worker was killed\n" << k.log;
  EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) != 0) << k.log;
  EXPECT_LT(k.took_s, timeout_s) << k.log;
  EXPECT_NE(k.log.find("job failed: worker 0 (rank"), std::string::npos) << k.log;
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_NE(summary.find("\"error\":\"worker 0"), std::string::npos) << summary;
  std::printf("killed worker named after %.1f s\n", k.took_s);
}

// Async and SSP go on with the survivors (no exactness promised): the killed worker is declared
// lost once silent, the servers stop waiting for its clock (SSP would hold every pull else), and
// the job ends by itself with exit 0 and the loss recorded. 25 epochs: the survivors must still
// be training when the loss is declared, about 3 s after the kill (with 4, async survivors at
// 2,056 trips/s had finished by then: "async goes on with 0 workers"; with 10 at 2,088 trips/s,
// after the faster CPU kernels, too).
TEST(PsCluster, AsyncAndSspGoOnWithoutAKilledWorker) {
  for (const std::string mode : {"async", "ssp"}) {
    const std::string dir = FreshDir("lose_" + mode);
    const auto k = KillWorkerDuringTraining(
        Launcher() + " --mode " + mode + " --workers 3 --servers 2 --out_dir " + dir +
            "/run -- --train_data " + kData +
            " --epochs 25 --log_every 1 --heartbeat_s 0.5 --staleness 1 --timeout_s 20",
        dir + "/run", dir + "/log", 2, 120);
    ASSERT_TRUE(k.killed) << k.log;
    ASSERT_TRUE(k.ended) << "the job did not end after its worker was killed\n" << k.log;
    EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << mode << "\n" << k.log;
    EXPECT_NE(k.log.find("[tteps] worker 2 (rank"), std::string::npos) << k.log;
    const std::string summary = ReadFile(dir + "/run/summary.json");
    EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
    const size_t lost = summary.find("\"membership\":[{\"event\":\"lost\",\"worker\":2,");
    ASSERT_NE(lost, std::string::npos) << summary;
    EXPECT_EQ(JsonNumber(summary.substr(lost), "workers_left"), 2) << summary;
    EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
    EXPECT_LT(JsonNumber(summary, "mape"), 1.0) << summary;
    const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
    EXPECT_NE(metrics.find("\"type\":\"membership\",\"event\":\"lost\""), std::string::npos);
    std::printf("%s: worker 2 killed, the job ended %.1f s later\n", mode.c_str(), k.took_s);
  }
}

// Sync mode outlives a killed worker exactly: its slice of every step is computed and pushed by
// a survivor (the data order does not depend on who computes a slice), so the job trains the
// same model as the undisturbed one, bit for bit. Also with the uneven first-worker slice, the
// killed worker being worker 0, together with clipping and AdaScale (the servers' global norm
// per step; the adopted slice's pieces come with its push).
TEST(PsCluster, SyncOutlivesAKilledWorkerAndTrainsTheSameModel) {
  struct Case {
    std::string name, flags;
    int killed;
  };
  for (const Case& c :
       {Case{"even", "", 2},
        Case{"first_clipped",
             "--first_worker_batch 10 --optimizer momentum --lr 0.01 --clip_norm 0.5 "
             "--lr_scaling adascale --lr_scaling_base 32",
             0}}) {
    const std::string dir = FreshDir("sync_lose_" + c.name);
    const std::string job = " --mode sync --workers 3 --servers 2 --out_dir " + dir;
    const std::string flags = " -- --train_data " + std::string(kData) +
                              " --epochs 3 --log_every 1 --heartbeat_s 0.5 --timeout_s 20 " +
                              c.flags;
    ASSERT_EQ(RunCommand(Launcher() + job + "/plain" + flags, 300, dir + "/plain.log"), 0)
        << ReadFile(dir + "/plain.log");
    const auto k = KillWorkerDuringTraining(Launcher() + job + "/run" + flags, dir + "/run",
                                            dir + "/log", c.killed, 120);
    ASSERT_TRUE(k.killed) << k.log;
    ASSERT_TRUE(k.ended) << "the job did not end after its worker was killed\n" << k.log;
    EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << k.log;
    const std::string summary = ReadFile(dir + "/run/summary.json");
    EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
    EXPECT_NE(summary.find("\"membership\":[{\"event\":\"lost\",\"worker\":" +
                           std::to_string(c.killed) + ","),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("\"slices_to\":["), std::string::npos) << summary;
    EXPECT_NE(summary.find("\"view\":1"), std::string::npos) << summary;  // the first change
    EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
    const double diff = MaxAbsDiff(dir + "/plain/model_last.pt", dir + "/run/model_last.pt");
    std::printf("sync, worker %d killed (%s): max |diff| to the undisturbed model = %g\n", c.killed,
                c.name.c_str(), diff);
    EXPECT_EQ(diff, 0.0);
  }
}

// A worker only stopped (SIGSTOP) past the deadline is declared lost like a dead one; resumed,
// it finds its pushes refused and is told to stop: it changes nothing, and the job ends well
// (in sync mode with the undisturbed model, bit for bit).
TEST(PsCluster, AStoppedWorkerResumedAfterItsLossIsRefused) {
  for (const std::string mode : {"ssp", "sync"}) {
    const std::string dir = FreshDir("stop_" + mode);
    const std::string job = " --mode " + mode + " --workers 3 --servers 1 --out_dir " + dir;
    const std::string flags = " -- --train_data " + std::string(kData) +
                              " --epochs 4 --log_every 1 --heartbeat_s 0.5 --staleness 1 "
                              "--timeout_s 20";
    if (mode == "sync") {
      ASSERT_EQ(RunCommand(Launcher() + job + "/plain" + flags, 300, dir + "/plain.log"), 0)
          << ReadFile(dir + "/plain.log");
    }
    BackgroundJob run(Launcher() + job + "/run" + flags, dir + "/run", dir + "/log");
    ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
    const pid_t pid = WorkerPid(dir + "/run", 1);
    ASSERT_GT(pid, 0) << ReadFile(dir + "/run/logs/scheduler-0.log");
    ASSERT_EQ(kill(pid, SIGSTOP), 0);
    const auto start = std::chrono::steady_clock::now();
    while (ReadFile(dir + "/run/metrics.jsonl").find("\"type\":\"membership\"") ==
               std::string::npos &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(pid, SIGCONT);
    ASSERT_TRUE(run.Wait(120)) << run.log();
    EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
    const std::string summary = ReadFile(dir + "/run/summary.json");
    EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
    EXPECT_NE(summary.find("\"membership\":[{\"event\":\"lost\",\"worker\":1,"), std::string::npos)
        << summary;
    EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
    // Its resumed traffic was refused (by the servers, or by the scheduler).
    EXPECT_GT(JsonNumber(summary.substr(summary.find("\"refused\"")), "messages"), 0) << summary;
    if (mode == "sync") {
      const double diff = MaxAbsDiff(dir + "/plain/model_last.pt", dir + "/run/model_last.pt");
      std::printf("sync, worker 1 stopped and resumed: max |diff| to the undisturbed = %g\n", diff);
      EXPECT_EQ(diff, 0.0);
    }
  }
}

// A killed scheduler: every other process of the job stops by itself within --silence_s (and a
// margin), the launcher names the cause, and --resume from the checkpoints continues to the
// undisturbed model, bit for bit.
TEST(PsCluster, AKilledSchedulerEndsEveryProcessAndTheJobResumes) {
  const std::string dir = FreshDir("kill_scheduler");
  const std::string job = " --mode sync --workers 2 --servers 2 --out_dir " + dir;
  const std::string flags = " -- --train_data " + std::string(kData) +
                            " --epochs 4 --log_every 1 --heartbeat_s 0.5 --timeout_s 20 "
                            "--checkpoint_every 5";
  ASSERT_EQ(RunCommand(Launcher() + job + "/plain" + flags, 300, dir + "/plain.log"), 0)
      << ReadFile(dir + "/plain.log");
  BackgroundJob run(Launcher() + job + "/run" + flags, dir + "/run", dir + "/log");
  ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
  // Well into training: past a few checkpoints.
  const auto start = std::chrono::steady_clock::now();
  while (ReadFile(dir + "/run/metrics.jsonl").find("\"step\":30,") == std::string::npos &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto schedulers = ProgramPids("tteps-scheduler", dir + "/run");
  ASSERT_EQ(schedulers.size(), 1u);
  ASSERT_EQ(kill(schedulers[0], SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  while (!ProgramPids("", dir + "/run").empty() &&
         std::chrono::steady_clock::now() - killed < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::printf("scheduler killed: every process gone after %.2f s (--silence_s 2.5)\n", took);
  EXPECT_LT(took, 2.5 + 1.5) << run.log();
  ASSERT_TRUE(run.Wait(60)) << run.log();
  EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) != 0) << run.log();
  EXPECT_NE(run.log().find("tteps: the job failed: the scheduler at tcp://"), std::string::npos)
      << run.log();
  EXPECT_NE(run.log().find("has been silent for"), std::string::npos) << run.log();

  ASSERT_EQ(
      RunCommand(Launcher() + job + "/resumed" + flags + " --resume " + dir + "/run/checkpoints",
                 300, dir + "/resumed.log"),
      0)
      << ReadFile(dir + "/resumed.log");
  const double diff = MaxAbsDiff(dir + "/plain/model_last.pt", dir + "/resumed/model_last.pt");
  std::printf("resumed after the scheduler's loss vs undisturbed: max |diff| = %g\n", diff);
  EXPECT_EQ(diff, 0.0);
}

// --patience: once the evaluations stop improving (here the learning rate falls to ~0 after
// the first step, so every later evaluation equals the first), training stops early, in sync
// mode with every worker after the same step, and locally too; summary.json says so.
TEST(PsCluster, PatienceStopsTrainingOnceEvaluationsStopImproving) {
  const std::string dir = FreshDir("patience");
  const std::string common = " --train_data " + std::string(kData) +
                             " --epochs 20 --log_every 1 --eval_every 2 --patience 2 "
                             "--lr_schedule step --lr_decay_every 1 --lr_decay 1e-30";
  ASSERT_EQ(RunCommand(Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                           "/sync --" + common,
                       300, dir + "/sync.log"),
            0)
      << ReadFile(dir + "/sync.log");
  ASSERT_EQ(RunCommand(Bin() + "/tteps-worker --mode=local --out_dir " + dir + "/local" + common,
                       300, dir + "/local.log"),
            0)
      << ReadFile(dir + "/local.log");
  for (const std::string run : {"sync", "local"}) {
    const std::string summary = ReadFile(dir + "/" + run + "/summary.json");
    EXPECT_NE(summary.find("\"early_stop\":{\"evaluation_step\":"), std::string::npos) << summary;
    EXPECT_LT(JsonNumber(summary, "steps"), 100) << summary;  // of 320 planned
    EXPECT_GT(JsonNumber(summary, "steps"), 2) << summary;
  }
  // Every worker stopped after the same step.
  const std::string metrics = ReadFile(dir + "/sync/metrics.jsonl");
  const std::regex last(R"re("type":"train","worker":(\d),"step":(\d+))re");
  std::map<int, int> steps;
  for (std::sregex_iterator it(metrics.begin(), metrics.end(), last), end; it != end; ++it) {
    steps[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  }
  ASSERT_EQ(steps.size(), 2u) << metrics.substr(0, 2000);
  EXPECT_EQ(steps[0], steps[1]);
}

TEST(PsCluster, TimeBudgetStopsSyncWorkersAfterTheSameStep) {
  // The stop flag travels with one worker's push; the servers' replies tell both workers.
  const auto steps = RunOutOfTime("budget_sync", "--mode sync --workers 2 --servers 2");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_GT(steps[0], 0);
  EXPECT_EQ(steps[0], steps[1]);
}

TEST(PsCluster, TimeBudgetReleasesSspWorkers) {
  // Staleness 0: without the stop flag's release a worker would wait for a stopped one.
  const auto steps =
      RunOutOfTime("budget_ssp", "--mode ssp --workers 2 --servers 1", "--staleness 0");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_GT(steps[0], 0);
  EXPECT_GT(steps[1], 0);
}

TEST(PsCluster, StartsWithoutMpi) {
  const std::string dir = FreshDir("tcp");
  const std::string endpoint = FreeLoopbackEndpoint();
  const std::string flags = " --scheduler=" + endpoint + " --timeout_s 60";
  const std::string cmd =
      "(" + Bin() + "/tteps-scheduler --mode sync --num_servers 1 --num_workers 1 --out_dir " +
      dir + "/run --train_data " + kData + " --max_steps 5" + flags + " & s=$!; " + Bin() +
      "/tteps-server" + flags + " & " + Bin() + "/tteps-worker" + flags + " & wait $s)";
  EXPECT_EQ(RunCommand("bash -c '" + cmd + "'", 120, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_EQ(JsonNumber(summary, "steps"), 5) << summary;
  EXPECT_GT(JsonNumber(summary, "mape"), 0) << summary;
}

}  // namespace
}  // namespace tteps

namespace tteps {
namespace {

using namespace testing_util;

TEST(PsCluster, CheckpointAndResumeContinueFromTheSavedStep) {
  const std::string dir = FreshDir("resume");
  const std::string job = Launcher() + " --mode sync --workers 2 --servers 2 --out_dir " + dir;
  const std::string flags = std::string(" --train_data ") + kData +
                            " --optimizer adam --log_every 5 --checkpoint_every 10";
  // Straight through 30 steps, and 20 steps then a resumed run to 30.
  ASSERT_EQ(RunCommand(job + "/straight --" + flags + " --max_steps 30", 300, dir + "/a.log"), 0)
      << ReadFile(dir + "/a.log");
  ASSERT_EQ(RunCommand(job + "/first --" + flags + " --max_steps 20", 300, dir + "/b.log"), 0)
      << ReadFile(dir + "/b.log");
  const std::string ckpt = dir + "/first/checkpoints";
  ASSERT_TRUE(std::filesystem::exists(ckpt + "/server-1-v20.ckpt"));
  ASSERT_EQ(RunCommand(job + "/resumed --" + flags + " --max_steps 30 --resume " + ckpt, 300,
                       dir + "/c.log"),
            0)
      << ReadFile(dir + "/c.log");
  const std::string summary = ReadFile(dir + "/resumed/summary.json");
  EXPECT_NE(summary.find("\"resumed_from\":{\"checkpoint_dir\":\"" + ckpt + "\",\"version\":20}"),
            std::string::npos)
      << summary;
  // The resumed run's first metrics are past step 20, and it ends at step 30.
  const std::string metrics = ReadFile(dir + "/resumed/metrics.jsonl");
  EXPECT_EQ(metrics.find("\"step\":5,"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"step\":25,"), std::string::npos) << metrics;
  EXPECT_EQ(JsonNumber(ReadFile(dir + "/resumed/summary.json"), "steps"), 30);
  // Two workers' sums are added in either order to the same bits, so the runs agree exactly.
  const double diff = MaxAbsDiff(dir + "/straight/model_last.pt", dir + "/resumed/model_last.pt");
  std::printf("straight vs resumed: max |diff| = %g\n", diff);
  EXPECT_EQ(diff, 0.0);
}

}  // namespace
}  // namespace tteps

namespace tteps {
namespace {

using namespace testing_util;

TEST(PsCluster, BadInputEndsTheJobAtOnceNamingIt) {
  const std::string dir = FreshDir("bad_input");
  const std::string job = Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir;
  // A wrong flag never reaches mpirun.
  EXPECT_EQ(RunCommand(job + "/a -- --no_such_flag", 60, dir + "/a.log"), 2);
  EXPECT_NE(ReadFile(dir + "/a.log").find("unknown command line flag 'no_such_flag'"),
            std::string::npos)
      << ReadFile(dir + "/a.log");
  // A bad record stops the scheduler before the job starts; every rank stops with it.
  std::ifstream in(kData);
  std::ofstream bad(dir + "/bad.jsonl");
  std::string line;
  for (int i = 1; i <= 5 && std::getline(in, line); ++i) {
    if (i == 3) line = std::regex_replace(line, std::regex("\"weekID\":\\d+"), "\"weekID\":9");
    bad << line << "\n";
  }
  bad.close();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(RunCommand(job + "/b -- --train_data " + dir + "/bad.jsonl", 60, dir + "/b.log"), 0);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log = ReadFile(dir + "/b.log");
  EXPECT_NE(log.find("bad.jsonl:3: field 'weekID': 9 is out of range"), std::string::npos) << log;
  // The other ranks note it in their logs (the console keeps the cause only).
  const std::string logs = JobLogs(dir + "/b");
  EXPECT_NE(logs.find("the scheduler failed before the job started"), std::string::npos) << logs;
  EXPECT_LT(took, 20) << log;  // well before the 30 s bootstrap deadline
}

}  // namespace
}  // namespace tteps
