// Jobs on a packed trip store (tteps-pack): the same models as on the JSON-lines file, an exact
// resume mid-epoch, a worker whose copy of the store differs, refused, and a store changed under
// a running job, named.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/cluster_test_util.h"

namespace tteps {
namespace {

using namespace testing_util;

const std::string kSample = TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl";
const std::string kStats = TTEPS_SOURCE_DIR "/data/chengdu/stats.json";

std::string PackSample(const std::string& dir, const std::string& name, const std::string& input) {
  const std::string store = dir + "/" + name;
  EXPECT_EQ(RunCommand(Bin() + "/tteps-pack --out " + store + " " + input, 60, dir + "/pack.log"),
            0)
      << ReadFile(dir + "/pack.log");
  return store;
}

bool SameBytes(const std::string& a, const std::string& b) {
  const std::string x = ReadFile(a);
  return !x.empty() && x == ReadFile(b);
}

// The main job's sample, packed: a sync job (2 workers, 2 servers) with the default flags writes
// the same model as on the JSON-lines file, bit for bit (the same statistics, of every trip, and
// the same split, the latest day held out); stopped at step 20 (mid-epoch: 1,000 training trips
// are 16 steps of 64) and resumed from its checkpoint, the same model again.
TEST(StoreJob, ThePackedSampleTrainsAndResumesTheJsonModelBitForBit) {
  const std::string dir = FreshDir("store_same");
  const std::string store = PackSample(dir, "store", kSample);
  const std::string job = Launcher() + " --mode sync --workers 2 --servers 2 --out_dir " + dir;
  const std::string flags = " --optimizer adam --log_every 5 --checkpoint_every 10";
  const auto run = [&](const std::string& name, const std::string& data, const std::string& more) {
    EXPECT_EQ(RunCommand(job + "/" + name + " -- --train_data " + data + flags + more, 300,
                         dir + "/" + name + ".log"),
              0)
        << ReadFile(dir + "/" + name + ".log");
  };
  run("json", kSample, " --max_steps 30");
  run("store", store, " --max_steps 30");
  run("first", store, " --max_steps 20");
  run("resumed", store, " --max_steps 30 --resume " + dir + "/first/checkpoints");
  const std::string summary = ReadFile(dir + "/store/summary.json");
  EXPECT_EQ(JsonNumber(summary, "steps"), 30) << summary;
  EXPECT_EQ(JsonNumber(summary, "n"), 200) << summary;  // dateID 29 held out
  EXPECT_NE(summary.find(R"("data":{"split":"day","train_trips":1000,"eval_trips":200,)"
                         R"("stats":")" +
                         store + "/stats.json\"}"),
            std::string::npos)
      << summary;
  EXPECT_NE(ReadFile(dir + "/json/summary.json").find("computed from the 1200 trips"),
            std::string::npos);
  const std::string memory = summary.substr(summary.find("\"peak_private_mb\""));
  EXPECT_GT(JsonNumber(memory, "scheduler"), 0) << summary;
  EXPECT_TRUE(SameBytes(dir + "/json/model_last.pt", dir + "/store/model_last.pt"));
  EXPECT_TRUE(SameBytes(dir + "/store/model_last.pt", dir + "/resumed/model_last.pt"));
  EXPECT_EQ(JsonNumber(ReadFile(dir + "/json/summary.json"), "mape"), JsonNumber(summary, "mape"));
}

// A worker started by hand with another store than the scheduler's is refused at registration,
// and the job ends at once naming the host, both paths and both checksums. A worker that
// registers a second later is told why at once (it used to wait out its --timeout_s).
TEST(StoreJob, AWorkerWithAnotherStoreIsRefusedNamingHostAndPath) {
  const std::string dir = FreshDir("store_other");
  const std::string ours = PackSample(dir, "ours", kSample);
  {
    std::ifstream in(kSample);
    std::ofstream out(dir + "/half.jsonl");
    std::string line;
    for (int i = 0; i < 600 && std::getline(in, line); ++i) out << line << '\n';
  }
  const std::string theirs = PackSample(dir, "theirs", dir + "/half.jsonl");
  const std::string endpoint = FreeLoopbackEndpoint();
  const std::string flags = " --scheduler=" + endpoint + " --timeout_s 20";
  const std::string late = "sleep 1; s0=$(date +%s%N); " + Bin() + "/tteps-worker --train_data " +
                           ours + flags + " 2>" + dir +
                           "/late.log; echo $? $(($(date +%s%N) - s0)) >" + dir + "/late.rc";
  const std::string cmd = "(" + Bin() +
                          "/tteps-scheduler --mode sync --num_servers 1 --num_workers 2 "
                          "--out_dir " +
                          dir + "/run --train_data " + ours + " --max_steps 5" + flags +
                          " & s=$!; " + Bin() + "/tteps-worker --train_data " + theirs + flags +
                          " & w=$!; (" + late +
                          ") & l=$!; wait $s; rc=$?; wait $w; wait $l; exit $rc)";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(RunCommand("bash -c '" + cmd + "'", 60, dir + "/log"), 0) << ReadFile(dir + "/log");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  // The late worker: refused with the job's reason, within seconds.
  std::istringstream late_rc(ReadFile(dir + "/late.rc"));
  int rc = 0;
  long long took_ns = 0;
  ASSERT_TRUE(late_rc >> rc >> took_ns) << ReadFile(dir + "/late.rc");
  EXPECT_NE(rc, 0);
  EXPECT_LT(took_ns, 5'000'000'000LL) << ReadFile(dir + "/late.log");
  EXPECT_NE(ReadFile(dir + "/late.log").find("its training data '" + theirs + "'"),
            std::string::npos)
      << ReadFile(dir + "/late.log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_NE(summary.find("its training data '" + theirs + "' is the store 0x"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("the scheduler's '" + ours + "' is the store 0x"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("worker on host "), std::string::npos) << summary;
}

// A shard rewritten in place while a sync job trains on it (same file, same size, other bytes):
// the job fails within seconds and summary.json names the shard, instead of training on it.
TEST(StoreJob, AShardChangedUnderARunningJobEndsItNamingTheShard) {
  const std::string dir = FreshDir("store_changed");
  const std::string store = PackSample(dir, "store", kSample);
  const std::string out = dir + "/run";
  BackgroundJob job(Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + out +
                        " -- --train_data " + store + " --stats " + kStats +
                        " --split day --epochs 1000 --log_every 5",
                    out, dir + "/run.log");
  ASSERT_TRUE(job.WaitForTraining(120)) << job.log();
  {
    std::fstream shard(store + "/shard-00000.bin", std::ios::in | std::ios::out | std::ios::binary);
    shard.seekp(-4096, std::ios::end);  // inside the last trips' points
    const char garbage[16] = {'n', 'o', 't', ' ', 'a', ' ', 't', 'r', 'i', 'p'};
    shard.write(garbage, sizeof(garbage));
    ASSERT_TRUE(shard.good());
  }
  const auto changed = std::chrono::steady_clock::now();
  ASSERT_TRUE(job.Wait(60)) << "the job trained on: " << job.log();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - changed).count();
  EXPECT_TRUE(WIFEXITED(job.status()) && WEXITSTATUS(job.status()) != 0) << job.log();
  EXPECT_LT(took, 15) << job.log();
  const std::string summary = ReadFile(out + "/summary.json");
  const auto error = summary.find("\"error\"");
  ASSERT_NE(error, std::string::npos) << summary;
  EXPECT_NE(summary.find("shard-00000.bin", error), std::string::npos) << summary;
  EXPECT_NE(summary.find(store, error), std::string::npos) << summary;
}

// A shard truncated to half its size while a sync job trains on it: no process dies of a signal
// (a read of the lost pages raises SIGBUS, which would kill the worker, and the job would go on
// without it); the job ends at once naming the shard and how it shrank, summary.json written and
// the checkpoints intact.
TEST(StoreJob, AShardTruncatedUnderARunningJobEndsItNamingTheShard) {
  const std::string dir = FreshDir("store_truncated");
  const std::string store = PackSample(dir, "store", kSample);
  const std::string out = dir + "/run";
  BackgroundJob job(Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + out +
                        " -- --train_data " + store +
                        " --epochs 1000 --log_every 5 --checkpoint_every 10",
                    out, dir + "/run.log");
  ASSERT_TRUE(job.WaitForTrainReports(2, 120)) << job.log();
  const std::string checkpoint = out + "/checkpoints/server-0-v10.ckpt";
  for (int i = 0; i < 600 && !std::filesystem::exists(checkpoint); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(std::filesystem::exists(checkpoint)) << job.log();
  const std::string shard = store + "/shard-00000.bin";
  const auto bytes = std::filesystem::file_size(shard);
  std::filesystem::resize_file(shard, bytes / 2);
  const auto cut = std::chrono::steady_clock::now();
  ASSERT_TRUE(job.Wait(60)) << "the job trained on: " << job.log();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
  EXPECT_TRUE(WIFEXITED(job.status()) && WEXITSTATUS(job.status()) == 1) << job.log();
  EXPECT_LT(took, 10) << job.log();
  const std::string summary = ReadFile(out + "/summary.json");
  EXPECT_NE(summary.find("\"status\":\"failed\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("shard-00000.bin"), std::string::npos) << summary;
  EXPECT_NE(summary.find(" from " + std::to_string(bytes) + " to " + std::to_string(bytes / 2) +
                         " bytes"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("\"membership\":[]"), std::string::npos) << summary;  // none lost
  EXPECT_EQ(job.log().find("Bus error"), std::string::npos) << job.log();
  EXPECT_TRUE(std::filesystem::exists(checkpoint));
  std::printf("a shard cut to half its size: the job ended %.2f s later naming it\n", took);
}

}  // namespace
}  // namespace tteps
