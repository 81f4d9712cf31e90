// Jobs with the PPO2 agent choosing the workers' accumulation: real mpirun, real training.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "tests/integration/cluster_test_util.h"

namespace tteps {
namespace {

using namespace testing_util;

const char* kData = TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl";

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; ++at) ++n;
  return n;
}

// The agent of worker scope: each worker's window is an observation and sets its alpha.
TEST(PpoJob, SyncJobWithTheAgentChangesAlphaAndFinishes) {
  const std::string dir = FreshDir("ppo_sync");
  const std::string policy = dir + "/policy.pt";
  const std::string cmd = Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                          "/run -- --train_data " + kData +
                          " --max_steps 80 --batch_size 32 --log_every 2 --accumulation 2" +
                          " --accumulation_policy ppo --ppo_scope worker --accumulation_max 8" +
                          " --ppo_rollout 8 --ppo_minibatch 8 --ppo_policy_in none" +
                          " --ppo_policy_out " + policy;
  ASSERT_EQ(RunCommand(cmd, 600, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_NE(summary.find("\"accumulation_policy\":\"ppo\""), std::string::npos) << summary;
  EXPECT_GT(JsonNumber(summary, "accumulation_decisions"), 0) << summary;
  EXPECT_GT(JsonNumber(summary, "mape"), 0) << summary;
  EXPECT_EQ(summary.find("policy_error"), std::string::npos) << summary;
  const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
  // Every decision is recorded with its observation; at least one changed a worker's accumulation,
  // and the workers then trained with an accumulation other than the starting 2.
  const std::regex decision(
      R"re(\{"type":"decision","worker":\d,"step":\d+,"wall_s":[^,]+,"action":"(halve|keep|double)","old_accumulation":(\d+),"new_accumulation":(\d+),"observation":\[[^\]]+\])re");
  bool changed = false;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), decision);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[2] != (*it)[3]) changed = true;
  }
  const std::regex trained(R"("type":"train".*"accumulation":(\d+),)");
  bool applied = false;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), trained);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[1] != "2") applied = true;
  }
  EXPECT_TRUE(changed) << metrics;
  EXPECT_TRUE(applied) << "no worker trained with a changed accumulation\n" << metrics;
  EXPECT_GT(Count(metrics, "\"reward\":"), 0);
  EXPECT_TRUE(std::filesystem::exists(policy));

  // The saved policy drives a ring job without learning.
  const std::string ring = Launcher() + " --mode ring --workers 2 --out_dir " + dir +
                           "/ring -- --train_data " + kData +
                           " --max_steps 30 --batch_size 32 --log_every 2 --accumulation 2" +
                           " --accumulation_policy ppo --ppo_scope worker --accumulation_max 8" +
                           " --ppo_learn=false --ppo_policy_in " + policy;
  ASSERT_EQ(RunCommand(ring, 600, dir + "/ring.log"), 0) << ReadFile(dir + "/ring.log");
  const std::string ring_summary = ReadFile(dir + "/ring/summary.json");
  EXPECT_NE(ring_summary.find("\"policy\":{\"policy_in\":\"" + policy + "\",\"learns\":false,"),
            std::string::npos)
      << ring_summary;
  EXPECT_GT(JsonNumber(ring_summary, "accumulation_decisions"), 0);
}

// Without --ppo_policy_in the agent starts from the policy shipped in the repository for its
// scope and only acts (no --ppo_learn); the default scope is job: the agent sets the global
// batch, 2 x a power of two, and the speed split gives worker 1, slowed 3x, a quarter of it.
TEST(PpoJob, TheShippedPolicyIsTheDefaultAndSetsTheGlobalBatch) {
  const std::string dir = FreshDir("ppo_shipped");
  const std::string cmd = Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                          "/run -- --train_data " + kData +
                          " --max_steps 40 --batch_size 32 --log_every 2 --accumulation 4" +
                          " --accumulation_policy ppo --accumulation_max 8" +
                          " --slowdown 200 --slowdown_worker 1";
  ASSERT_EQ(RunCommand(cmd, 600, dir + "/log"), 0) << ReadFile(dir + "/log");
  // It acts on its most likely action and learns nothing.
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_NE(summary.find("\"policy\":{\"policy_in\":\"" TTEPS_SOURCE_DIR
                         "/scheduler/ppo/shipped_policy.pt\",\"learns\":false,\"updates\":0}"),
            std::string::npos)
      << summary;
  EXPECT_GT(JsonNumber(summary, "accumulation_decisions"), 0);
  const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
  const std::regex decision(
      R"re("type":"decision","worker":(\d),"step":(\d+),"wall_s":[^,]+,"action":"(halve|keep|double)/split","old_accumulation":\d+,"new_accumulation":(\d+))re");
  // A decision's splits arrive one line per worker: the pair is checked once both are in.
  std::map<int64_t, std::map<int, int64_t>> splits;  // step -> worker -> accumulation
  int decisions = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), decision);
       it != std::sregex_iterator(); ++it, ++decisions) {
    splits[std::stoll((*it)[2])][std::stoi((*it)[1])] = std::stoll((*it)[4]);
  }
  int64_t alpha[2] = {4, 4}, step = -1;
  bool uneven = false;  // (the smallest batch, 2 x 1, cannot be split unevenly)
  for (const auto& [at, split] : splits) {
    for (const auto& [w, a] : split) alpha[w] = a;
    step = at;
    uneven = uneven || alpha[1] < alpha[0];
    EXPECT_LE(alpha[1], alpha[0]) << "step " << at << "\n" << metrics;
    const int64_t total = alpha[0] + alpha[1];  // 2 x a power of two
    EXPECT_TRUE(total == 2 || total == 4 || total == 8 || total == 16)
        << "step " << at << ": " << total << "\n"
        << metrics;
  }
  ASSERT_GT(decisions, 0) << metrics;
  EXPECT_TRUE(uneven) << metrics;
  std::printf(
      "job scope, worker 1 slowed 3x: %d decisions, at step %lld accumulations %lld, %lld\n",
      decisions, static_cast<long long>(step), static_cast<long long>(alpha[0]),
      static_cast<long long>(alpha[1]));
}

// A sync job of 2 workers (and `extra` flags) with the speed policy at --accumulation 4, worker
// 1 slowed 3x; checks that its last decisions gave worker 1 the smaller accumulation, the two
// summing to 8, and returns (metrics.jsonl, last accumulation of worker 0, of worker 1).
std::tuple<std::string, int64_t, int64_t> SpeedPolicyJob(const std::string& name,
                                                         const std::string& extra) {
  const std::string dir = FreshDir(name);
  const std::string cmd = Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                          "/run -- --train_data " + kData +
                          " --max_steps 40 --batch_size 32 --log_every 2 --accumulation 4" +
                          " --accumulation_policy speed --slowdown 200 --slowdown_worker 1" + extra;
  EXPECT_EQ(RunCommand(cmd, 600, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_NE(summary.find("\"accumulation_policy\":\"speed\""), std::string::npos) << summary;
  const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
  const std::regex decision(
      R"re("type":"decision","worker":(\d),"step":\d+,"wall_s":[^,]+,"action":"speed","old_accumulation":\d+,"new_accumulation":(\d+))re");
  int64_t last[2] = {4, 4};
  int decisions = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), decision);
       it != std::sregex_iterator(); ++it, ++decisions) {
    last[std::stoi((*it)[1])] = std::stoll((*it)[2]);
  }
  EXPECT_GT(decisions, 0) << metrics;
  EXPECT_LT(last[1], last[0]) << metrics;
  EXPECT_EQ(last[0] + last[1], 8) << metrics;
  return {metrics, last[0], last[1]};
}

// --accumulation_policy speed (LB-BSP): worker 1 slowed 3x gets the smaller accumulation, and
// the sum over the workers stays 2 x 4.
TEST(PpoJob, TheSpeedPolicyGivesASlowedWorkerTheSmallerAccumulation) {
  const auto [metrics, first, second] = SpeedPolicyJob("speed_policy", "");
  std::printf(
      "speed policy, worker 1 slowed 3x: accumulation %lld (worker 0) and %lld (worker 1)\n",
      static_cast<long long>(first), static_cast<long long>(second));
}

// --slices 4 on 2 workers with the speed policy: it decides each worker's own slice (the slowed
// worker's gets the smaller accumulation, the two summing to 2 x 4), while the slices adopted
// from the start keep the launch's 4, so the global batch stays 4 x 4 micro-batches.
TEST(PpoJob, WithSlicesTheSpeedPolicyDecidesEachWorkersOwnSlice) {
  const auto [metrics, first, second] = SpeedPolicyJob("speed_slices", " --slices 4");
  // Slices 2 and 3 (adopted) drew 4 throughout: no change of theirs was recorded.
  EXPECT_EQ(metrics.find("\"slice\":3,\"from_step\""), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("\"slice\":2,\"from_step\""), std::string::npos) << metrics;
  std::printf("speed policy, --slices 4: own slices %lld and %lld, adopted ones 4\n",
              static_cast<long long>(first), static_cast<long long>(second));
}

// A worker lost after the speed policy changed its accumulation: its slice is computed on by
// a survivor at the accumulation the lost worker last drew (its schedule, which the worker
// reported before the step's push), and the job ends well with every planned step. In sync
// mode and in ring mode (over TCP, the default). `join` (sync): a worker started by hand then
// takes the slice over, drawing by the same schedule.
void LoseASpeedPolicyWorker(const std::string& mode, bool join = false) {
  const std::string dir = FreshDir("speed_lose_" + mode + (join ? "_join" : ""));
  const std::string servers = mode == "sync" ? " --servers 1" : "";
  const std::string steps = join ? "48" : "36";
  BackgroundJob job(Launcher() + " --mode " + mode + " --workers 3" + servers + " --out_dir " +
                        dir + "/run -- --train_data " + kData + " --max_steps " + steps +
                        " --batch_size 48 --log_every 2 --accumulation 4" +
                        " --accumulation_policy speed --slowdown 200 --slowdown_worker 2" +
                        " --heartbeat_s 0.5 --timeout_s 20",
                    dir + "/run", dir + "/log");
  // The scheduler's record of worker 2 drawing a changed accumulation (its own report).
  const std::string metrics_file = dir + "/run/metrics.jsonl";
  const std::regex changed(
      R"re(\{"type":"accumulation","worker":2,"slice":2,"from_step":\d+,"position":\d+,"accumulation":(\d+)\})re");
  std::smatch m;
  std::string text;
  for (int i = 0; i < 1800 && !std::regex_search(text, m, changed); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = ReadFile(metrics_file);
  }
  ASSERT_FALSE(m.empty()) << "the speed policy never changed worker 2's accumulation\n" << text;
  const std::string drawn = m[1];
  const pid_t pid = WorkerPid(dir + "/run", 2);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  std::unique_ptr<BackgroundJob> joiner;
  if (join) {
    ASSERT_TRUE(WaitForText(dir + "/run/metrics.jsonl", "\"event\":\"lost\"", 30)) << job.log();
    joiner = std::make_unique<BackgroundJob>(
        Bin() + "/tteps-worker --scheduler=" + SchedulerEndpoint(dir + "/run") + " --logs " + dir +
            "/join-logs",
        dir + "/run", dir + "/join.log");
  }
  ASSERT_TRUE(job.Wait(180)) << job.log();
  EXPECT_TRUE(WIFEXITED(job.status()) && WEXITSTATUS(job.status()) == 0) << job.log();
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_EQ(summary.find("\"error\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"membership\":[{\"event\":\"lost\",\"worker\":2,"), std::string::npos)
      << summary;
  EXPECT_EQ(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
  std::string logs;
  for (const auto& f : std::filesystem::directory_iterator(dir + "/run/logs")) {
    logs += ReadFile(f.path().string());
  }
  const std::regex adopted(
      R"(computes the slice of lost worker 2 from step \d+ on \((\d+) micro-batches a step, (\d+) from the next\))");
  ASSERT_TRUE(std::regex_search(logs, m, adopted)) << logs;
  EXPECT_EQ(m[2].str(), drawn) << logs;
  std::printf(
      "%s, speed policy, worker 2 lost while drawing %s micro-batches a step: its "
      "adopter drew %s, then %s\n",
      mode.c_str(), drawn.c_str(), m[1].str().c_str(), m[2].str().c_str());
  // The global batch stays 3 x 4 micro-batches through the loss: the policy splits what the
  // lost slice leaves over the survivors' slices, the adopter's extra micro-batches (its train
  // lines say how many) counted in its time; no decision is for the lost slice until a worker
  // joins for it.
  const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
  EXPECT_NE(metrics.find("\"adopted_micro_batches\":" + drawn + ","), std::string::npos)
      << metrics.substr(0, 4000);
  const size_t lost_at = metrics.find("\"event\":\"lost\"");
  const size_t joined_at = metrics.find("\"event\":\"join\"");
  const std::regex decision(
      R"re("type":"decision","worker":(\d),[^\n]*"new_accumulation":(\d+))re");
  std::vector<int64_t> alpha(3, 4);
  bool orphaned = false;
  int after = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), decision);
       it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position());
    if (at > lost_at && !orphaned) {
      orphaned = true;
      alpha[2] = std::stoll(drawn);
    }
    const int w = std::stoi((*it)[1]);
    if (at > lost_at) ++after;
    if (at > lost_at && w == 2 && (joined_at == std::string::npos || at < joined_at)) {
      ADD_FAILURE() << "a decision for the lost worker's slice:\n" << it->str();
    }
    alpha[w] = std::stoll((*it)[2]);
  }
  if (!orphaned) alpha[2] = std::stoll(drawn);
  EXPECT_EQ(alpha[0] + alpha[1] + alpha[2], 12) << metrics.substr(0, 4000);
  std::printf("%s: %d decisions after the loss; accumulations %lld, %lld and %lld (slice 2)\n",
              mode.c_str(), after, static_cast<long long>(alpha[0]),
              static_cast<long long>(alpha[1]), static_cast<long long>(alpha[2]));
  if (!join) return;
  ASSERT_TRUE(joiner->Wait(60)) << joiner->log();
  EXPECT_TRUE(WIFEXITED(joiner->status()) && WEXITSTATUS(joiner->status()) == 0) << joiner->log();
  EXPECT_NE(summary.find("{\"event\":\"join\",\"worker\":3,\"slice\":2,"), std::string::npos)
      << summary;
  std::string join_logs = joiner->log();
  for (const auto& f : std::filesystem::directory_iterator(dir + "/join-logs")) {
    join_logs += ReadFile(f.path().string());
  }
  const std::regex joined(
      R"(worker 3 computes the slice of worker 2 from step (\d+) \((\d+) micro-batches a step\))");
  std::smatch j;
  ASSERT_TRUE(std::regex_search(join_logs, j, joined)) << join_logs;
  EXPECT_EQ(j[2].str(), drawn) << join_logs;
  std::printf("sync, speed policy: a worker joined for worker 2's slice from step %s, drawing %s\n",
              j[1].str().c_str(), j[2].str().c_str());
}

TEST(PpoJob, AJobWithTheSpeedPolicyOutlivesAKilledWorker) {
  for (const std::string mode : {"sync", "ring"}) {
    SCOPED_TRACE(mode);
    LoseASpeedPolicyWorker(mode);
  }
}

TEST(PpoJob, AWorkerJoiningAPolicyJobDrawsByItsSlicesSchedule) {
  LoseASpeedPolicyWorker("sync", /*join=*/true);
}

// Where a slice's stream stands at `step` by the kept schedules' lines of `slice`
// ("slice step position accumulation"), and what that step draws.
std::pair<int64_t, int64_t> KeptScheduleAt(const std::string& kept, int slice, int64_t step) {
  std::istringstream in(kept);
  std::string line;
  std::pair<int64_t, int64_t> at{-1, -1};
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    int64_t s, from, position, accumulation;
    f >> s >> from >> position >> accumulation;
    if (s == slice && from <= step) at = {position + (step - from) * accumulation, accumulation};
  }
  return at;
}

// --resume of a job whose speed policy changed the accumulations: the scheduler kept every
// slice's schedule beside the checkpoints, and each resumed worker starts its slice's stream
// where its schedule stood at the checkpoint's step (no trip skipped or drawn twice), drawing
// what that step drew; before, it started at step x --accumulation.
TEST(PpoJob, AResumedPolicyJobStartsEachSliceWhereItsScheduleStood) {
  const std::string dir = FreshDir("speed_resume");
  const std::string job = Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir;
  // 80 steps: on a loaded machine the policy may change an accumulation only past step 30, and
  // the run must still be training two checkpoints later, when its scheduler is lost.
  const std::string flags = " -- --train_data " + std::string(kData) +
                            " --max_steps 80 --batch_size 32 --log_every 1 --accumulation 4"
                            " --accumulation_policy speed --slowdown 200 --slowdown_worker 1"
                            " --heartbeat_s 0.5 --timeout_s 20 --checkpoint_every 5";
  BackgroundJob run(job + "/run" + flags, dir + "/run", dir + "/log");
  const std::regex changed(
      R"re(\{"type":"accumulation","worker":1,"slice":1,"from_step":(\d+),"position":\d+,"accumulation":\d+\})re");
  std::smatch m;
  std::string text;
  for (int i = 0; i < 1200 && !std::regex_search(text, m, changed); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = ReadFile(dir + "/run/metrics.jsonl");
  }
  ASSERT_FALSE(m.empty()) << "the speed policy never changed worker 1's accumulation\n" << text;
  // Two checkpoints past the change, then the scheduler is lost and the job ends.
  const std::string past = "\"step\":" + std::to_string(std::stoi(m[1]) + 12) + ",";
  ASSERT_TRUE(WaitForText(dir + "/run/metrics.jsonl", past, 120)) << run.log();
  const auto schedulers = ProgramPids("tteps-scheduler", dir + "/run");
  ASSERT_EQ(schedulers.size(), 1u);
  ASSERT_EQ(kill(schedulers[0], SIGKILL), 0);
  ASSERT_TRUE(run.Wait(60)) << run.log();
  const std::string kept = ReadFile(dir + "/run/checkpoints/accumulation_schedules.txt");
  ASSERT_FALSE(kept.empty());

  ASSERT_EQ(RunCommand(job + "/resumed" + flags + " --resume " + dir + "/run/checkpoints", 300,
                       dir + "/resumed.log"),
            0)
      << ReadFile(dir + "/resumed.log");
  const std::string summary = ReadFile(dir + "/resumed/summary.json");
  const size_t resumed_from = summary.find("\"resumed_from\":");
  ASSERT_NE(resumed_from, std::string::npos) << summary;
  const auto version = static_cast<int64_t>(JsonNumber(summary.substr(resumed_from), "version"));
  const std::string resumed_metrics = ReadFile(dir + "/resumed/metrics.jsonl");
  for (int w = 0; w < 2; ++w) {
    const auto [position, accumulation] = KeptScheduleAt(kept, w, version);
    ASSERT_GE(position, 0) << kept;
    // The driver's own word, in its restart report: each worker starts again at the checkpoint's
    // step with its slice's stream where the kept schedule says, drawing what that step drew.
    const std::string restart = "{\"type\":\"accumulation\",\"worker\":" + std::to_string(w) +
                                ",\"slice\":" + std::to_string(w) +
                                ",\"from_step\":" + std::to_string(version + 1) +
                                ",\"position\":" + std::to_string(position) +
                                ",\"accumulation\":" + std::to_string(accumulation) + "}";
    EXPECT_NE(resumed_metrics.find(restart), std::string::npos) << restart << "\n"
                                                                << resumed_metrics;
    std::printf(
        "resumed at step %lld: worker %d's stream at micro-batch %lld (%lld a step; "
        "constant --accumulation would say %lld)\n",
        static_cast<long long>(version + 1), w, static_cast<long long>(position),
        static_cast<long long>(accumulation), static_cast<long long>(version * 4));
    if (w == 1) {
      EXPECT_NE(position, version * 4) << "the schedule did not change before " << kept;
    }
  }
  EXPECT_EQ(JsonNumber(summary, "steps"), 80) << summary;
}

// --accumulation_policy goodput (Pollux): every train line carries the gradient noise the
// workers measured (two micro-batches or more per step, from the third step on in Adam's
// geometry; the scale itself is null in a window whose |G|^2 estimate came out not positive),
// and the policy moves the global batch within the bounds once it has measured it.
TEST(PpoJob, TheGoodputPolicyMeasuresTheNoiseScaleAndChoosesTheBatch) {
  const std::string dir = FreshDir("goodput_policy");
  const std::string cmd = Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                          "/run -- --train_data " + kData +
                          " --max_steps 60 --batch_size 32 --log_every 4 --accumulation 4" +
                          " --noise_geometry plain --accumulation_policy goodput" +
                          " --accumulation_min 2" +
                          " --accumulation_max 8";
  ASSERT_EQ(RunCommand(cmd, 600, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  EXPECT_NE(summary.find("\"accumulation_policy\":\"goodput\""), std::string::npos) << summary;
  const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
  const std::regex train(
      R"re("type":"train".*"gradient_noise_scale":([^,]+),"gradient_sq":([^,]+),"gradient_trace":([^,]+),)re");
  int lines = 0, scales = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), train);
       it != std::sregex_iterator(); ++it, ++lines) {
    EXPECT_NE((*it)[2], "null") << it->str();
    EXPECT_NE((*it)[3], "null") << it->str();
    if ((*it)[1] != "null") ++scales;
  }
  EXPECT_EQ(lines, 2 * 15) << metrics;
  // A window of 4 steps resolves the true gradient (|G|^2 > 0) often enough in this short job;
  // in Adam's geometry only about every other time, and a few windows of large negative
  // estimates then held the average below zero, with no decision in 60 or 100 steps in some
  // runs (the plain gradient's estimates are steadier).
  EXPECT_GT(scales, lines / 4) << metrics;
  const std::regex decision(
      R"re("type":"decision","worker":(\d),"step":\d+,"wall_s":[^,]+,"action":"goodput","old_accumulation":\d+,"new_accumulation":(\d+))re");
  int decisions = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), decision);
       it != std::sregex_iterator(); ++it, ++decisions) {
    const int64_t a = std::stoll((*it)[2]);
    EXPECT_GE(a, 2);
    EXPECT_LE(a, 8);
  }
  EXPECT_GT(decisions, 0) << metrics;
}

// Accumulation 1 measures no noise: the train lines say so with null, not with a number.
TEST(PpoJob, AnAccumulationOfOneReportsNoNoiseScale) {
  const std::string dir = FreshDir("noise_none");
  const std::string cmd = Launcher() + " --mode sync --workers 2 --servers 1 --out_dir " + dir +
                          "/run -- --train_data " + kData +
                          " --max_steps 8 --batch_size 32 --log_every 4";
  ASSERT_EQ(RunCommand(cmd, 600, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string metrics = ReadFile(dir + "/run/metrics.jsonl");
  EXPECT_NE(metrics.find("\"gradient_noise_scale\":null"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("\"gradient_noise_scale\":0"), std::string::npos) << metrics;
}

TEST(PpoJob, AMissingPolicyFileIsRefusedBeforeTheJobStarts) {
  const std::string dir = FreshDir("ppo_missing");
  const std::string cmd = Launcher() + " --mode sync --workers 1 --servers 1 --out_dir " + dir +
                          "/run -- --train_data " + kData +
                          " --accumulation_policy ppo --ppo_policy_in " + dir + "/nope.pt";
  EXPECT_EQ(RunCommand(cmd, 60, dir + "/log"), 2);
  EXPECT_NE(ReadFile(dir + "/log").find("cannot open --ppo_policy_in"), std::string::npos)
      << ReadFile(dir + "/log");
}

}  // namespace
}  // namespace tteps
