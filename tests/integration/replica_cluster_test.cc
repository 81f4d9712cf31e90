// Lost servers for real: mpirun jobs whose servers hold each key range twice (--replicas 2),
// or once with checkpoints (a rollback), a server killed with SIGKILL while the job trains, and
// the model compared with the undisturbed job's.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster_test_util.h"

namespace tteps {
namespace {

using namespace testing_util;

const char* kData = TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl";

// summary.json's "server_state_hashes", in server order ("" for a server that did not report).
std::vector<std::string> StateHashes(const std::string& summary) {
  std::vector<std::string> out;
  const size_t at = summary.find("\"server_state_hashes\":{");
  if (at == std::string::npos) return out;
  const std::string hashes = summary.substr(at, summary.find('}', at) - at);
  const std::regex hash(R"re("(\d+)":"([0-9a-f]{16})")re");
  for (std::sregex_iterator it(hashes.begin(), hashes.end(), hash), end; it != end; ++it) {
    const size_t server = std::stoul((*it)[1]);
    if (out.size() <= server) out.resize(server + 1);
    out[server] = (*it)[2];
  }
  return out;
}

// Sync with 2 ranges held twice each (4 servers) trains what local training does, and the
// replicas of a range end bit-identical: both apply every step's aggregate, summed in slice
// order, with the same optimizer.
TEST(ReplicaCluster, SyncWithReplicasEqualsLocalTrainingAndReplicasAreBitIdentical) {
  const std::string dir = FreshDir("replicas_local");
  const std::string common = " --train_data " + std::string(kData) +
                             " --max_steps 20 --batch_size 64 --log_every 5 "
                             "--optimizer momentum --lr 0.01 --clip_norm 0.5";
  ASSERT_EQ(RunCommand(Bin() + "/tteps-worker --mode=local --out_dir " + dir + "/local" + common,
                       300, dir + "/local.log"),
            0)
      << ReadFile(dir + "/local.log");
  ASSERT_EQ(RunCommand(Launcher() + " --mode sync --workers 2 --servers 4 --out_dir " + dir +
                           "/sync -- --replicas 2" + common,
                       300, dir + "/sync.log"),
            0)
      << ReadFile(dir + "/sync.log");
  const std::string summary = ReadFile(dir + "/sync/summary.json");
  const std::vector<std::string> hashes = StateHashes(summary);
  ASSERT_EQ(hashes.size(), 4u) << summary;
  EXPECT_EQ(hashes[0], hashes[2]) << summary;  // server s holds range s % 2
  EXPECT_EQ(hashes[1], hashes[3]) << summary;
  EXPECT_NE(hashes[0], hashes[1]) << summary;
  const double diff = MaxAbsDiff(dir + "/local/model_last.pt", dir + "/sync/model_last.pt");
  std::printf("sync with --replicas 2 (4 servers) vs local: max |diff| = %g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

// A sync job with --replicas 2 loses a server and then a worker to SIGKILL and ends with the
// undisturbed job's model, bit for bit: every push went to both replicas, so the survivor holds
// every step; the workers' waiting pulls are asked again of it; the lost worker's slice is
// computed by a survivor. Also with two ranges, the uneven first-worker slice and clipping
// (each range's norm from one replica): a backup killed, then worker 0.
TEST(ReplicaCluster, SyncOutlivesAKilledServerAndAKilledWorker) {
  struct Case {
    std::string name, flags;
    int servers, server, worker;
  };
  for (const Case& c :
       {Case{"primary", "", 2, 0, 2},
        Case{"first_clipped",
             "--first_worker_batch 10 --optimizer momentum --lr 0.01 --clip_norm 0.5", 4, 2, 0}}) {
    const std::string dir = FreshDir("replicas_kill_" + c.name);
    const std::string job =
        " --mode sync --workers 3 --servers " + std::to_string(c.servers) + " --out_dir " + dir;
    // 10 epochs (160 steps): enough that the killed worker's 2.5 s of silence is noticed while
    // the job still trains (with 3, 48 steps of 25 ms ended first and nothing was lost).
    const std::string flags = " -- --replicas 2 --train_data " + std::string(kData) +
                              " --epochs 10 --log_every 1 --heartbeat_s 0.5 --timeout_s 20 " +
                              c.flags;
    ASSERT_EQ(RunCommand(Launcher() + job + "/plain" + flags, 300, dir + "/plain.log"), 0)
        << ReadFile(dir + "/plain.log");
    BackgroundJob run(Launcher() + job + "/run" + flags, dir + "/run", dir + "/log");
    ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
    const pid_t server = NodePid(dir + "/run", "server", c.server);
    ASSERT_GT(server, 0) << ReadFile(dir + "/run/logs/scheduler-0.log");
    ASSERT_EQ(kill(server, SIGKILL), 0);
    ASSERT_TRUE(WaitForText(dir + "/run/metrics.jsonl", "\"event\":\"server lost\"", 30))
        << run.log();
    // A few steps on the replica, then a worker.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const pid_t worker = WorkerPid(dir + "/run", c.worker);
    ASSERT_GT(worker, 0);
    ASSERT_EQ(kill(worker, SIGKILL), 0);
    ASSERT_TRUE(run.Wait(180)) << "the job did not end\n" << run.log();
    EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
    const std::string summary = ReadFile(dir + "/run/summary.json");
    EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
    EXPECT_NE(summary.find("\"membership\":[{\"event\":\"server lost\",\"server\":" +
                           std::to_string(c.server) + ","),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("{\"event\":\"lost\",\"worker\":" + std::to_string(c.worker) + ","),
              std::string::npos)
        << summary;
    EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
    EXPECT_NE(run.log().find("server " + std::to_string(c.server) + " (rank"), std::string::npos)
        << run.log();  // the console line names it
    const double diff = MaxAbsDiff(dir + "/plain/model_last.pt", dir + "/run/model_last.pt");
    std::printf("sync --replicas 2, server %d then worker %d killed (%s): max |diff| = %g\n",
                c.server, c.worker, c.name.c_str(), diff);
    EXPECT_EQ(diff, 0.0);
    // The undisturbed job's replicas are bit-identical.
    const std::vector<std::string> hashes = StateHashes(ReadFile(dir + "/plain/summary.json"));
    ASSERT_EQ(hashes.size(), static_cast<size_t>(c.servers));
    for (int s = c.servers / 2; s < c.servers; ++s) EXPECT_EQ(hashes[s], hashes[s - c.servers / 2]);
  }
}

// Without a replica (--replicas 1) a lost server makes the job roll back to its newest
// complete checkpoint, on the servers left (keys cut anew), and train the abandoned steps
// again: the same model as the undisturbed job's, bit for bit (the per-key arithmetic does not
// depend on how the keys are cut). summary.json records the rollback and the steps redone.
// Also after a worker loss (its adopter computes the lost slice again from the checkpoint),
// with two servers killed at once (two rollbacks, the second onto the first map's files), and
// with a second server killed after the first rollback (onto the rollback map's files).
TEST(ReplicaCluster, ALostServerWithoutReplicaRollsBackToTheCheckpointAndEndsTheSame) {
  struct Case {
    std::string name;
    bool worker_first;
    std::vector<int> at_once;  // servers killed together at step 25
    int later;                 // a server killed at step 45 after the first rollback (-1: none)
  };
  const std::string base = FreshDir("rollback");
  const std::string flags = " -- --train_data " + std::string(kData) +
                            " --epochs 5 --log_every 1 --heartbeat_s 0.5 --timeout_s 20 "
                            "--checkpoint_every 10 --optimizer momentum --lr 0.01";
  const std::string job = " --mode sync --workers 3 --servers 3 --out_dir ";
  ASSERT_EQ(RunCommand(Launcher() + job + base + "/plain" + flags, 300, base + "/plain.log"), 0)
      << ReadFile(base + "/plain.log");
  for (const Case& c :
       // One server alone is the first half of "then another" (server 1 at step 25).
       {Case{"adopted", true, {1}, -1}, Case{"two at once", false, {1, 2}, -1},
        Case{"then another", false, {1}, 2}}) {
    SCOPED_TRACE(c.name);
    const std::string dir = base + "/" + std::regex_replace(c.name, std::regex(" "), "_");
    BackgroundJob run(Launcher() + job + dir + flags, dir, dir + ".log");
    if (c.worker_first) {
      ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
      const pid_t worker = WorkerPid(dir, 2);
      ASSERT_GT(worker, 0);
      ASSERT_EQ(kill(worker, SIGKILL), 0);
      ASSERT_TRUE(WaitForText(dir + "/metrics.jsonl", "\"event\":\"lost\"", 30)) << run.log();
    }
    ASSERT_TRUE(WaitForText(dir + "/metrics.jsonl", "\"step\":25,", 120)) << run.log();
    for (int id : c.at_once) {
      const pid_t server = NodePid(dir, "server", id);
      ASSERT_GT(server, 0);
      ASSERT_EQ(kill(server, SIGKILL), 0);
    }
    if (c.later >= 0) {
      ASSERT_TRUE(WaitForText(dir + "/metrics.jsonl", "\"event\":\"rollback\"", 60)) << run.log();
      // Past the rollback map's own checkpoints (versions 30 and 40); training stalled at the
      // kill, so step 45 comes after the rollback.
      ASSERT_TRUE(WaitForText(dir + "/metrics.jsonl", "\"step\":45,", 120)) << run.log();
      const pid_t server = NodePid(dir, "server", c.later);
      ASSERT_GT(server, 0);
      ASSERT_EQ(kill(server, SIGKILL), 0);
    }
    ASSERT_TRUE(run.Wait(180)) << "the job did not end\n" << run.log();
    EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
    const std::string summary = ReadFile(dir + "/summary.json");
    EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
    EXPECT_NE(summary.find("{\"event\":\"rollback\",\"server\":"), std::string::npos) << summary;
    const int rollbacks = static_cast<int>(c.at_once.size()) + (c.later >= 0 ? 1 : 0);
    int found = 0;
    for (size_t at = 0; (at = summary.find("\"event\":\"rollback\"", at)) != std::string::npos;
         ++at) {
      ++found;
    }
    EXPECT_EQ(found, rollbacks) << summary;
    EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
    EXPECT_GT(JsonNumber(summary, "steps_redone"), 0) << summary;
    const double diff = MaxAbsDiff(base + "/plain/model_last.pt", dir + "/model_last.pt");
    std::printf(
        "sync, 3 servers without replicas, %s: %d rollback(s), %g steps redone, max |diff| = %g\n",
        c.name.c_str(), found, JsonNumber(summary, "steps_redone"), diff);
    EXPECT_EQ(diff, 0.0);
  }
}

// The scheduler's address, from its log ("scheduler at tcp://...").
// A worker started by hand (tteps-worker --scheduler ADDRESS, no mpirun) joins a running sync
// job: it takes a lost worker's slice over from the survivor that adopted it, at a step
// boundary, so the job still ends with the undisturbed model, bit for bit. While no slice is
// free a joiner is refused with the reason and the job goes on untouched. --min_workers 3:
// training pauses once worker 2 is lost, and would fail if nobody joined within --timeout_s;
// here somebody does, and training goes on from the step it paused at.
TEST(ReplicaCluster, AWorkerJoiningASyncJobTakesALostSliceOverAndTheModelIsTheSame) {
  const std::string dir = FreshDir("join");
  const std::string job = " --mode sync --workers 3 --servers 1 --out_dir " + dir;
  const std::string flags = " -- --train_data " + std::string(kData) +
                            " --epochs 5 --log_every 1 --heartbeat_s 0.5 --timeout_s 20 "
                            "--min_workers 3 --optimizer momentum --lr 0.01";
  ASSERT_EQ(RunCommand(Launcher() + job + "/plain" + flags, 300, dir + "/plain.log"), 0)
      << ReadFile(dir + "/plain.log");
  BackgroundJob run(Launcher() + job + "/run" + flags, dir + "/run", dir + "/log");
  ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
  const std::string endpoint = SchedulerEndpoint(dir + "/run");
  ASSERT_FALSE(endpoint.empty()) << ReadFile(dir + "/run/logs/scheduler-0.log");
  const std::string joiner = Bin() + "/tteps-worker --scheduler=" + endpoint + " --logs " + dir;
  // Nothing to take over yet: refused at once, with the reason.
  EXPECT_NE(RunCommand(joiner + "/early-logs", 60, dir + "/early.log"), 0);
  EXPECT_NE(ReadFile(dir + "/early.log").find("cannot join: no slice to take over"),
            std::string::npos)
      << ReadFile(dir + "/early.log");
  const pid_t worker = WorkerPid(dir + "/run", 2);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  ASSERT_TRUE(WaitForText(dir + "/run/metrics.jsonl", "\"event\":\"lost\"", 30)) << run.log();
  // Paused a while (dozens of steps' time) before anybody joins.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  BackgroundJob join(joiner + "/join-logs", dir + "/run", dir + "/join.log");
  ASSERT_TRUE(run.Wait(240)) << "the job did not end\n" << run.log();
  EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
  ASSERT_TRUE(join.Wait(60)) << join.log();
  EXPECT_TRUE(WIFEXITED(join.status()) && WEXITSTATUS(join.status()) == 0) << join.log();
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
  const size_t joined = summary.find("{\"event\":\"join\",\"worker\":3,\"slice\":2,");
  ASSERT_NE(joined, std::string::npos) << summary;
  // Views, one per change in the order of the records: 1 the loss, 2 the pause, then the resume
  // (the joiner registered: enough workers live) and the handover (the joiner is ready: its
  // adopter leaves the slice) in either order, and the join (the slice released to it) after
  // the handover.
  const size_t handover = summary.find("{\"event\":\"handover\",\"slice\":2,");
  ASSERT_NE(handover, std::string::npos) << summary;
  EXPECT_LT(JsonNumber(summary.substr(handover), "view"),
            JsonNumber(summary.substr(joined), "view"))
      << summary;
  const std::string membership = summary.substr(summary.find("\"membership\":"));
  std::vector<int> views;
  for (size_t at = membership.find("\"view\":"); at != std::string::npos;
       at = membership.find("\"view\":", at + 1)) {
    views.push_back(static_cast<int>(JsonNumber(membership.substr(at), "view")));
  }
  EXPECT_EQ(views, (std::vector<int>{1, 2, 3, 4, 5})) << summary;
  EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
  // No step was taken while paused: the furthest step reported at the resume is the one at
  // the pause, or the one the workers were in then.
  const size_t pause = summary.find("{\"event\":\"pause\"");
  const size_t resume = summary.find("{\"event\":\"resume\"");
  ASSERT_NE(pause, std::string::npos) << summary;
  ASSERT_NE(resume, std::string::npos) << summary;
  EXPECT_EQ(JsonNumber(summary.substr(pause), "min_workers"), 3) << summary;
  const double paused_at = JsonNumber(summary.substr(pause), "step");
  const double resumed_at = JsonNumber(summary.substr(resume), "step");
  const double paused_s = JsonNumber(summary.substr(resume), "paused_s");
  std::printf("paused at step %g for %.2f s, resumed at step %g\n", paused_at, paused_s,
              resumed_at);
  EXPECT_LE(resumed_at, paused_at + 1) << summary;
  EXPECT_GT(paused_s, 1.5) << summary;
  const double diff = MaxAbsDiff(dir + "/plain/model_last.pt", dir + "/run/model_last.pt");
  std::printf("sync, worker 2 killed, a worker joined for its slice: max |diff| = %g\n", diff);
  EXPECT_EQ(diff, 0.0);
}

// Async and SSP: a worker started by hand joins in a lost worker's place (async: killed; SSP:
// let go by launch/tteps --release). The servers count its pushes for that place (SSP: its
// clock holds the others' pulls again), it starts at the step the lost worker last reported
// (a released one: the step it left after, so no step of the place is trained twice), and the
// job ends with exit 0 and a join record. --min_workers 2: training pauses from the loss to the
// join. With --replicas 2 (async) the replicas stay bit-identical through the loss and the
// join: the primary names both in its order. 20 epochs (320 steps): in async mode the survivor
// does not wait for the lost worker, and 80 steps (5 epochs) had ended in 2.6 s, before the
// loss was noticed (2.5 s of silence), so no place was left to join.
TEST(ReplicaCluster, AWorkerJoiningAnAsyncOrSspJobTakesALostWorkersPlace) {
  for (const std::string mode : {"async", "ssp"}) {
    SCOPED_TRACE(mode);
    const std::string dir = FreshDir("join_" + mode);
    const std::string servers = mode == "async" ? "2" : "1";
    const std::string own = mode == "async" ? " --replicas 2" : " --staleness 2";
    BackgroundJob run(Launcher() + " --mode " + mode + " --workers 2 --servers " + servers +
                          " --out_dir " + dir + "/run --" + own + " --train_data " + kData +
                          " --epochs 20 --log_every 1 --heartbeat_s 0.5 --timeout_s 20"
                          " --optimizer adam --lr 0.001 --min_workers 2",
                      dir + "/run", dir + "/log");
    ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
    const bool release = mode == "ssp";
    if (release) {
      ASSERT_TRUE(WaitForText(dir + "/run/metrics.jsonl", "\"step\":20,", 60)) << run.log();
      EXPECT_EQ(RunCommand(Launcher() + " --out_dir " + dir + "/run --release 1", 30,
                           dir + "/release.log"),
                0)
          << ReadFile(dir + "/release.log");
    } else {
      const pid_t worker = WorkerPid(dir + "/run", 1);
      ASSERT_GT(worker, 0);
      ASSERT_EQ(kill(worker, SIGKILL), 0);
    }
    ASSERT_TRUE(WaitForText(dir + "/run/metrics.jsonl",
                            release ? "\"event\":\"release\"" : "\"event\":\"lost\"", 30))
        << run.log();
    const std::string endpoint = SchedulerEndpoint(dir + "/run");
    BackgroundJob join(
        Bin() + "/tteps-worker --scheduler=" + endpoint + " --logs " + dir + "/join-logs",
        dir + "/run", dir + "/join.log");
    ASSERT_TRUE(run.Wait(240)) << "the job did not end\n" << run.log();
    EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
    ASSERT_TRUE(join.Wait(60)) << join.log();
    EXPECT_TRUE(WIFEXITED(join.status()) && WEXITSTATUS(join.status()) == 0) << join.log();
    const std::string summary = ReadFile(dir + "/run/summary.json");
    EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
    const size_t joined = summary.find("{\"event\":\"join\",\"worker\":2,\"slice\":1,");
    ASSERT_NE(joined, std::string::npos) << summary;
    EXPECT_NE(summary.find("{\"event\":\"pause\""), std::string::npos) << summary;
    EXPECT_NE(summary.find("{\"event\":\"resume\""), std::string::npos) << summary;
    const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
    const std::regex trained(R"re("type":"train","worker":2,"step":(\d+),)re");
    int lines = 0;
    for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), trained);
         it != std::sregex_iterator(); ++it) {
      ++lines;
    }
    EXPECT_GT(lines, 10) << "the joiner hardly trained";
    if (release) {  // on from the step after the one worker 1 left after
      const size_t left = summary.find("{\"event\":\"release\",\"worker\":1,");
      ASSERT_NE(left, std::string::npos) << summary;
      EXPECT_EQ(JsonNumber(summary.substr(joined), "step"),
                JsonNumber(summary.substr(left), "steps"))
          << summary;
    }
    std::printf(
        "%s: worker 1 killed, worker 2 joined in its place from step %g and reported %d "
        "windows\n",
        mode.c_str(), JsonNumber(summary.substr(joined), "step") + 1, lines);
    if (mode == "async") {
      const std::vector<std::string> hashes = StateHashes(summary);
      ASSERT_EQ(hashes.size(), 2u) << summary;
      EXPECT_EQ(hashes[0], hashes[1]) << summary;
    }
  }
}

// An elastic sync job: 2 workers and --slices 4 (each computes 2), grown to 4 workers (two
// workers started by hand take a slice each over), shrunk back to 3 by SIGTERM to worker 1
// (it leaves at a step boundary at once, no silence waited for, and exits 0; its slice goes to
// the others) and to 2 by `launch/tteps --release 4` (the same, asked through the scheduler):
// the undisturbed 2-worker run's model, bit for bit, and every change in the membership record.
// A release the job cannot grant is refused with the reason, and the job runs on.
TEST(ReplicaCluster, ASlicedSyncJobGrowsAndShrinksAndTheModelIsTheSame) {
  const std::string dir = FreshDir("elastic");
  const std::string job = " --mode sync --workers 2 --servers 1 --out_dir " + dir;
  const std::string flags = " -- --train_data " + std::string(kData) +
                            " --epochs 100 --max_steps 160 --log_every 1 --slices 4 "
                            "--heartbeat_s 0.5 --timeout_s 20 --optimizer momentum --lr 0.01";
  ASSERT_EQ(RunCommand(Launcher() + job + "/plain" + flags, 300, dir + "/plain.log"), 0)
      << ReadFile(dir + "/plain.log");
  BackgroundJob run(Launcher() + job + "/run" + flags, dir + "/run", dir + "/log");
  const std::string metrics = dir + "/run/metrics.jsonl";
  ASSERT_TRUE(WaitForText(metrics, "\"step\":20,", 120)) << run.log();
  const std::string endpoint = SchedulerEndpoint(dir + "/run");
  ASSERT_FALSE(endpoint.empty());
  const std::string joiner = Bin() + "/tteps-worker --scheduler=" + endpoint + " --logs " + dir;
  BackgroundJob join_a(joiner + "/a-logs", dir + "/run", dir + "/a.log");
  BackgroundJob join_b(joiner + "/b-logs", dir + "/run", dir + "/b.log");
  ASSERT_TRUE(WaitForText(metrics, "\"event\":\"join\",\"worker\":5", 60)) << run.log();
  ASSERT_TRUE(WaitForText(metrics, "\"event\":\"join\",\"worker\":4", 60)) << run.log();
  ASSERT_TRUE(WaitForText(metrics, "\"step\":100,", 120)) << run.log();
  const pid_t worker = WorkerPid(dir + "/run", 1);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(kill(worker, SIGTERM), 0);
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitForText(metrics, "\"event\":\"release\"", 30)) << run.log();
  // At the next step boundary, not after --silence_s (2.5 s here).
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(2));
  ASSERT_TRUE(WaitForText(metrics, "\"step\":120,", 120)) << run.log();
  const std::string release = Launcher() + " --out_dir " + dir + "/run --release ";
  EXPECT_EQ(RunCommand(release + "1", 30, dir + "/release1.log"), 2)
      << ReadFile(dir + "/release1.log");
  EXPECT_NE(ReadFile(dir + "/release1.log").find("worker 1 is not a live worker of this job"),
            std::string::npos)
      << ReadFile(dir + "/release1.log");
  EXPECT_EQ(RunCommand(release + "4", 30, dir + "/release4.log"), 0)
      << ReadFile(dir + "/release4.log");
  ASSERT_TRUE(WaitForText(metrics, "\"signal\":\"launch/tteps --release\"", 30)) << run.log();
  ASSERT_TRUE(run.Wait(240)) << "the job did not end\n" << run.log();
  EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
  for (BackgroundJob* j : {&join_a, &join_b}) {
    ASSERT_TRUE(j->Wait(60)) << j->log();
    EXPECT_TRUE(WIFEXITED(j->status()) && WEXITSTATUS(j->status()) == 0) << j->log();
  }
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
  EXPECT_EQ(CountOf(summary, "{\"event\":\"join\""), 2u) << summary;
  EXPECT_NE(summary.find("{\"event\":\"release\",\"worker\":1,"), std::string::npos) << summary;
  EXPECT_NE(summary.find("{\"event\":\"release\",\"worker\":4,"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("\"event\":\"lost\""), std::string::npos) << summary;
  EXPECT_EQ(JsonNumber(summary, "steps"), 160) << summary;
  EXPECT_EQ(MaxAbsDiff(dir + "/plain/model_last.pt", dir + "/run/model_last.pt"), 0.0);
}

// --min_workers: a lost worker that nobody replaces within --timeout_s fails the job, naming it;
// the survivor waits meanwhile and ends with the job.
TEST(ReplicaCluster, TooFewWorkersForLongerThanTheTimeoutFailTheJobNamingTheLost) {
  const std::string dir = FreshDir("min_workers");
  BackgroundJob run(Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                        "/run -- --train_data " + kData +
                        " --epochs 30 --log_every 1 --heartbeat_s 0.5 --timeout_s 6 "
                        "--min_workers 2",
                    dir + "/run", dir + "/log");
  ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
  const pid_t worker = WorkerPid(dir + "/run", 1);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(run.Wait(120)) << run.log();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) != 0) << run.log();
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_NE(summary.find("only 1 of --min_workers 2 workers live for 6 s"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("lost: worker 1 (rank"), std::string::npos) << summary;
  EXPECT_NE(summary.find("{\"event\":\"pause\""), std::string::npos) << summary;
  EXPECT_EQ(RunCommand("grep -q 'waits for workers to join' " + dir + "/run/logs/worker-*.log", 10,
                       dir + "/grep.log"),
            0)
      << "the survivor did not pause";
  EXPECT_LT(took, 30) << "the job ended " << took << " s after the kill";
}

// Async and SSP with --replicas 2: every push reaches both replicas of its range, and the
// backup applies them in the order its primary did (the primary names each one), so the
// replicas end bit-identical however the pushes raced. Also when a worker is killed: the
// primary's order says where it dropped the worker.
TEST(ReplicaCluster, AsyncAndSspReplicasApplyPushesInOneOrderAndEndBitIdentical) {
  for (const std::string mode : {"async", "ssp", "async-kill"}) {
    const bool kill_one = mode == "async-kill";
    const std::string dir = FreshDir("replicas_order_" + mode);
    const std::string launch =
        Launcher() + " --mode " + mode.substr(0, mode.find('-')) +
        " --workers 3 --servers 4 --out_dir " + dir + "/run -- --replicas 2 --train_data " + kData +
        " --batch_size 32 --optimizer adam --lr 0.001 --log_every 1" +
        (kill_one ? " --epochs 4 --heartbeat_s 0.5 --timeout_s 20" : " --max_steps 40");
    BackgroundJob run(launch, dir + "/run", dir + "/log");
    if (kill_one) {
      ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
      const pid_t worker = WorkerPid(dir + "/run", 2);
      ASSERT_GT(worker, 0);
      ASSERT_EQ(kill(worker, SIGKILL), 0);
    }
    ASSERT_TRUE(run.Wait(240)) << run.log();
    EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
    const std::string summary = ReadFile(dir + "/run/summary.json");
    EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
    if (kill_one) {
      EXPECT_NE(summary.find("{\"event\":\"lost\",\"worker\":2,"), std::string::npos) << summary;
    }
    const std::vector<std::string> hashes = StateHashes(summary);
    ASSERT_EQ(hashes.size(), 4u) << summary;
    EXPECT_EQ(hashes[0], hashes[2]) << summary;  // server s holds range s % 2
    EXPECT_EQ(hashes[1], hashes[3]) << summary;
    std::printf("%s, --replicas 2: range 0 %s / %s, range 1 %s / %s, %g pushes\n", mode.c_str(),
                hashes[0].c_str(), hashes[2].c_str(), hashes[1].c_str(), hashes[3].c_str(),
                JsonNumber(summary, "pushes"));
  }
}

// Async goes on too when a server is lost (no exactness promised there).
TEST(ReplicaCluster, AsyncGoesOnWithoutAKilledServer) {
  const std::string dir = FreshDir("replicas_async");
  const std::string launch = Launcher() + " --mode async --workers 2 --servers 2 --out_dir " + dir +
                             "/run -- --replicas 2 --train_data " + kData +
                             " --epochs 4 --log_every 1 --heartbeat_s 0.5 --timeout_s 20";
  BackgroundJob run(launch, dir + "/run", dir + "/log");
  ASSERT_TRUE(run.WaitForTraining(120)) << run.log();
  const pid_t server = NodePid(dir + "/run", "server", 0);
  ASSERT_GT(server, 0);
  ASSERT_EQ(kill(server, SIGKILL), 0);
  ASSERT_TRUE(run.Wait(180)) << run.log();
  EXPECT_TRUE(WIFEXITED(run.status()) && WEXITSTATUS(run.status()) == 0) << run.log();
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"event\":\"server lost\",\"server\":0,"), std::string::npos) << summary;
  EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
  EXPECT_LT(JsonNumber(summary, "mape"), 0.6) << summary;
}

}  // namespace
}  // namespace tteps
