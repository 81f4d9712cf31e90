// The wire and what crosses it, on real jobs: a job on one host listens on loopback only; a
// diverging or poisoned run fails loudly instead of reporting a null MAPE.
#include <sys/wait.h>

#include <fstream>
#include <regex>
#include <string>

#include "tests/integration/cluster_test_util.h"

namespace tteps {
namespace {

using namespace testing_util;

const char* kData = TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl";

// A one-host job: every socket of every tteps process listens on 127.0.0.1, none on all
// interfaces (0.0.0.0 or ::), MPI's transport included; each is logged as "listening:".
TEST(Wire, AOneHostJobListensOnLoopbackOnly) {
  const std::string dir = FreshDir("loopback_only");
  for (const std::string mode : {"sync", "ring"}) {
    const std::string out = dir + "/" + mode;
    const std::string servers = mode == "sync" ? " --servers 2" : "";
    BackgroundJob job(Launcher() + " --mode " + mode + " --workers 2" + servers + " --out_dir " +
                          out + " -- --epochs 100 --max_train_s 5",
                      out, out + ".log");
    ASSERT_TRUE(job.WaitForTraining(120)) << job.log();
    const std::vector<std::string> listening = ListeningAddresses(out);
    const size_t zmq_sockets = mode == "sync" ? 3 : 1;  // the scheduler's and the servers'
    EXPECT_EQ(listening.size(), zmq_sockets) << mode;
    for (const auto& a : listening) EXPECT_EQ(a.rfind("127.0.0.1:", 0), 0u) << mode << ": " << a;
    ASSERT_TRUE(job.Wait(120)) << job.log();
    EXPECT_TRUE(WIFEXITED(job.status()) && WEXITSTATUS(job.status()) == 0) << job.log();
    EXPECT_EQ(CountOf(JobLogs(out), "listening: tcp://127.0.0.1:"), zmq_sockets) << mode;
  }
}

// The issue's own reproduction: SGD with a learning rate of 1e9 diverges within a few steps.
TEST(Wire, ADivergingJobFailsNamingTheStepAndBatch) {
  const std::string dir = FreshDir("diverging");
  const std::string flags = " -- --optimizer sgd --lr 1e9 --max_steps 30";
  for (const std::string mode : {"sync", "ring"}) {
    const std::string servers = mode == "sync" ? " --servers 1" : "";
    const std::string out = dir + "/" + mode;
    const int rc = RunCommand(
        Launcher() + " --mode " + mode + " --workers 2" + servers + " --out_dir " + out + flags,
        120, out + ".log");
    const std::string log = ReadFile(out + ".log");
    EXPECT_NE(rc, 0) << log;
    EXPECT_TRUE(
        std::regex_search(log, std::regex("tteps: the job failed: worker \\d .*non-finite "
                                          "(loss|gradient).* in step \\d+, batch of trips")))
        << log;
    const std::string summary = ReadFile(out + "/summary.json");
    EXPECT_NE(summary.find("\"error\":\""), std::string::npos) << summary;
    EXPECT_EQ(summary.find("\"final_eval\""), std::string::npos) << summary;
    EXPECT_LT(JsonNumber(summary, "steps"), 30) << summary;
  }
}

// Training is finite, but a held-out trip's distance (3e38 km, finite as a float) makes a
// prediction infinite: the evaluation fails the job instead of reporting MAPE null or inf.
TEST(Wire, ANonFiniteEvaluationFailsTheJob) {
  const std::string dir = FreshDir("nan_eval");
  std::ifstream in(kData);
  std::ofstream eval(dir + "/eval.jsonl");
  std::string line;
  for (int i = 0; i < 30 && std::getline(in, line); ++i) {
    if (i == 7) line = std::regex_replace(line, std::regex("\"dist\":[0-9.]+"), "\"dist\":3e38");
    eval << line << "\n";
  }
  eval.close();
  const std::string flags = " --max_steps 4 --eval_data " + dir + "/eval.jsonl";
  const int local =
      RunCommand(Bin() + "/tteps-worker --mode local --out_dir " + dir + "/local" + flags, 120,
                 dir + "/local.log");
  EXPECT_EQ(local, 1) << ReadFile(dir + "/local.log");
  const int sync = RunCommand(
      Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir + "/sync --" + flags,
      120, dir + "/sync.log");
  EXPECT_NE(sync, 0) << ReadFile(dir + "/sync.log");
  for (const std::string run : {"local", "sync"}) {
    const std::string summary = ReadFile(dir + "/" + run + "/summary.json");
    EXPECT_NE(summary.find("evaluation over 30 trips gave MAPE inf"), std::string::npos)
        << run << ": " << summary;
    EXPECT_EQ(summary.find("\"mape\":null"), std::string::npos) << summary;
  }
  EXPECT_NE(ReadFile(dir + "/sync.log").find("tteps: the job failed: evaluation failed"),
            std::string::npos)
      << ReadFile(dir + "/sync.log");
}

}  // namespace
}  // namespace tteps
