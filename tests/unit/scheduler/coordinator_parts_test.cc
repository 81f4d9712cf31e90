// The coordinator's parts that are pure or nearly so: who may register, the servers' key
// ranges, summary.json from the job's facts, the evaluations' record, the membership log and
// the release requests.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "scheduler/eval_record.h"
#include "scheduler/job_metrics.h"
#include "scheduler/job_summary.h"
#include "scheduler/live_outputs.h"
#include "scheduler/membership_log.h"
#include "scheduler/placement.h"
#include "scheduler/registration.h"
#include "scheduler/release_requests.h"

namespace tteps::scheduler {
namespace {

NodeInfo Info(Role role, int id, const std::string& data_path = "", std::string checksum = "") {
  NodeInfo info;
  info.role = role;
  info.id = id;
  info.host = "h";
  info.data_path = data_path;
  info.data_checksum = std::move(checksum);
  return info;
}

std::string Fresh(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/tteps_coordinator_parts_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Registration, GivesIdsInOrderAndRefusesTakenIdsAndFullRoles) {
  std::vector<Node> nodes;
  bool fatal = true;
  NodeInfo a = Info(Role::kWorker, -1);
  EXPECT_EQ(RegistrationRefusal(nodes, 2, {}, &a, &fatal), "");
  EXPECT_FALSE(fatal);
  EXPECT_EQ(a.id, 0);  // started without MPI: the next id
  nodes.push_back({a, "p0", {}, false, false});
  NodeInfo b = Info(Role::kWorker, 0);
  EXPECT_EQ(RegistrationRefusal(nodes, 2, {}, &b, &fatal), "worker id 0 is taken");
  NodeInfo c = Info(Role::kWorker, 1);
  EXPECT_EQ(RegistrationRefusal(nodes, 2, {}, &c, &fatal), "");
  nodes.push_back({c, "p1", {}, false, false});
  NodeInfo d = Info(Role::kWorker, 2);
  EXPECT_EQ(RegistrationRefusal(nodes, 2, {}, &d, &fatal), "the job already has its 2 workers");
  NodeInfo s = Info(Role::kScheduler, 0);
  EXPECT_EQ(RegistrationRefusal(nodes, 1, {}, &s, &fatal), "a second scheduler tried to register");
  EXPECT_FALSE(fatal);
}

TEST(Registration, AWorkerWithOtherDataIsFatalAtLaunch) {
  const JobData job{"trips.store", "abc"};
  EXPECT_EQ(DataMismatch(Info(Role::kWorker, 0), job), "");  // reads the job's own
  EXPECT_EQ(DataMismatch(Info(Role::kWorker, 0, "/x/trips.store", "abc"), job), "");
  EXPECT_EQ(DataMismatch(Info(Role::kServer, 0, "/x", "zzz"), job), "");
  NodeInfo w = Info(Role::kWorker, 0, "/x/trips.jsonl");
  bool fatal = false;
  const std::string why = RegistrationRefusal({}, 1, job, &w, &fatal);
  EXPECT_TRUE(fatal);
  EXPECT_NE(why.find("'/x/trips.jsonl' is not a trip store"), std::string::npos) << why;
  EXPECT_NE(why.find("'trips.store' is the store abc"), std::string::npos) << why;
}

TEST(ServerRanges, ReplicasHoldTheSameRangeAndTheRangesCoverEveryKeyOnce) {
  const std::vector<KeyRange> r = ServerRanges(1000, 4, 2, {}, {});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].ToString(), r[2].ToString());
  EXPECT_EQ(r[1].ToString(), r[3].ToString());
  EXPECT_EQ(r[0].begin, 0);
  EXPECT_EQ(r[0].end, r[1].begin);
  EXPECT_EQ(r[1].end, 1000);
  // Weights for more servers than distinct ranges: the first ones count.
  const std::vector<KeyRange> w = ServerRanges(1000, 2, 1, {3, 1, 7}, {});
  EXPECT_EQ(w[0].end, 750);
}

JobFacts Facts(const CoordinatorOptions& opts, const WorkerBook& book,
               const std::map<int, server::ServerStats>& stats) {
  JobFacts f;
  f.opts = &opts;
  f.book = &book;
  f.server_stats = &stats;
  f.status = "failed";
  f.error = "registration timed out";
  return f;
}

TEST(JobSummary, AJobThatNeverTrainedReportsNoWorkAndItsError) {
  CoordinatorOptions opts;
  opts.config.exchange.mode = Mode::kSync;
  opts.total_steps = 40;
  WorkerBook book;
  std::map<int, server::ServerStats> stats;
  const std::string s = SummaryJson(Facts(opts, book, stats)).str();
  EXPECT_NE(s.find("\"status\":\"failed\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"train_seconds\":0"), std::string::npos) << s;
  EXPECT_NE(s.find("\"epochs\":0"), std::string::npos) << s;
  EXPECT_NE(s.find("\"error\":\"registration timed out\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"membership\":[]"), std::string::npos) << s;
  EXPECT_NE(s.find("\"push\":0"), std::string::npos) << s;  // a PS mode: push and pull times
  EXPECT_EQ(s.find("\"model\""), std::string::npos) << s;   // no model without a final eval
  EXPECT_EQ(s.find("accumulation_decisions"), std::string::npos) << s;
  EXPECT_EQ(s.find("resumed_from"), std::string::npos) << s;
}

TEST(JobSummary, AResumedJobNamesTheCheckpointItStartedFrom) {
  CoordinatorOptions opts;
  opts.config.output.resume = "/ckpt";
  opts.resume_version = 20;
  WorkerBook book;
  std::map<int, server::ServerStats> stats;
  const std::string s = SummaryJson(Facts(opts, book, stats)).str();
  EXPECT_NE(s.find("\"resumed_from\":{\"checkpoint_dir\":\"/ckpt\",\"version\":20}"),
            std::string::npos)
      << s;
}

TEST(JobSummary, RingModesReportAllreduceTimeAndSumRefusalsOverServers) {
  CoordinatorOptions opts;
  opts.config.exchange.mode = Mode::kRing;
  WorkerBook book;
  std::map<int, server::ServerStats> stats;
  stats[0].errors = 2;
  stats[1].errors = 3;
  stats[1].non_finite = 1;
  JobFacts f = Facts(opts, book, stats);
  f.refused = 4;
  f.decisions = 0;
  f.final_eval = "null";
  const std::string s = SummaryJson(f).str();
  EXPECT_NE(s.find("\"allreduce\":0"), std::string::npos) << s;
  EXPECT_EQ(s.find("bytes_per_step"), std::string::npos) << s;
  EXPECT_NE(s.find("\"messages\":9"), std::string::npos) << s;
  EXPECT_NE(s.find("\"non_finite\":1"), std::string::npos) << s;
  EXPECT_NE(s.find("\"accumulation_decisions\":0"), std::string::npos) << s;
  EXPECT_NE(s.find("\"evaluation\":\"none"), std::string::npos) << s;
  EXPECT_EQ(s.find("\"policy\""), std::string::npos) << s;  // a policy without a record
  f.policy_record = "{\"policy_in\":\"p.pt\",\"learns\":false,\"updates\":0}";
  const std::string with = SummaryJson(f).str();
  EXPECT_NE(with.find("\"policy\":{\"policy_in\":\"p.pt\",\"learns\":false,\"updates\":0}"),
            std::string::npos)
      << with;
}

EvalOutcome Outcome(int64_t step, double mape, bool best, bool final = false) {
  EvalOutcome r;
  r.step = step;
  r.version = step;
  r.mape = mape;
  r.best = best;
  r.final = final;
  r.json = "{\"mape\":" + std::to_string(mape) + "}";
  return r;
}

TEST(EvalRecord, StopsOnceAfterPatienceMissesAndKeepsTheBestAndTheFinal) {
  const std::string dir = Fresh("eval");
  {
    RunOutput out(dir);
    EvalRecord record(2, &out);
    EXPECT_FALSE(record.Add(Outcome(10, 0.3, true), true, 1));
    EXPECT_FALSE(record.Add(Outcome(20, 0.4, false), true, 2));
    EXPECT_TRUE(record.Add(Outcome(30, 0.5, false), true, 3));   // two misses in a row
    EXPECT_FALSE(record.Add(Outcome(40, 0.6, false), true, 4));  // once only
    EXPECT_FALSE(record.has_final());
    EXPECT_FALSE(record.Add(Outcome(50, 0.7, false, true), false, 5));
    EXPECT_TRUE(record.has_final());
    EXPECT_NE(record.best_json().find("\"step\":10"), std::string::npos) << record.best_json();
    EXPECT_NE(record.early_stop_json().find("\"evaluation_step\":30"), std::string::npos);
    EXPECT_EQ(record.final_json(), "{\"mape\":0.700000}");
  }
  const std::string metrics = Read(dir + "/metrics.jsonl");
  size_t lines = 0;
  for (char c : metrics) lines += c == '\n';
  EXPECT_EQ(lines, 5u) << metrics;
}

TEST(EvalRecord, NoEvaluationTripsIsNeitherALineNorAMiss) {
  const std::string dir = Fresh("null");
  RunOutput out(dir);
  EvalRecord record(1, &out);
  EvalOutcome none;
  none.json = "null";
  EXPECT_FALSE(record.Add(none, true, 1));
  EXPECT_FALSE(record.Add(none, true, 2));
  none.final = true;
  record.Add(none, false, 3);
  EXPECT_EQ(record.final_json(), "null");
  EXPECT_EQ(record.early_stop_json(), "");
}

TEST(MembershipLog, KeepsEveryEventInOrderAsAMetricsLineToo) {
  const std::string dir = Fresh("log");
  {
    RunOutput out(dir);
    MembershipLog log(&out);
    EXPECT_EQ(log.Json(), "[]");
    log.Record(JsonObject().Add("event", "lost").Add("worker", 1), "worker 1 lost");
    log.Record(JsonObject().Add("event", "join").Add("worker", 2), "worker 2 joined");
    EXPECT_EQ(log.Json(), "[{\"event\":\"lost\",\"worker\":1},{\"event\":\"join\",\"worker\":2}]");
  }
  EXPECT_NE(Read(dir + "/metrics.jsonl").find("{\"type\":\"membership\",\"event\":\"lost\""),
            std::string::npos);
}

// launch/tteps --release WHAT: a worker's id or a host names live workers; never all of them.
TEST(ReleaseTargets, AnIdOrAHostNamesLiveWorkersButNeverAllOfThem) {
  std::vector<Node> nodes(4);
  const char* hosts[] = {"a", "a", "b", "b"};
  std::vector<const Node*> live;
  for (int i = 0; i < 4; ++i) {
    nodes[i].info = Info(Role::kWorker, i);
    nodes[i].info.host = hosts[i];
    live.push_back(&nodes[i]);
  }
  std::string error;
  auto targets = ReleaseTargets("2", live, &error);
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0]->info.id, 2);
  targets = ReleaseTargets("b", live, &error);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0]->info.id, 2);
  EXPECT_EQ(targets[1]->info.id, 3);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_TRUE(ReleaseTargets("7", live, &error).empty());
  EXPECT_EQ(error, "worker 7 is not a live worker of this job (live: 0, 1, 2, 3)");
  EXPECT_TRUE(ReleaseTargets("c", live, &error).empty());
  EXPECT_EQ(error, "no live worker runs on host c (hosts: a, b)");
  live.resize(2);  // workers 0 and 1, both on host a
  EXPECT_TRUE(ReleaseTargets("a", live, &error).empty());
  EXPECT_NE(error.find("releasing a would leave no worker"), std::string::npos) << error;
  EXPECT_TRUE(ReleaseTargets("", live, &error).empty());
  EXPECT_NE(error.find("names no worker"), std::string::npos) << error;
}

// The request is taken once (the file removed), trimmed; the answer is written whole.
TEST(ReleaseRequests, TakesARequestOnceAndAnswersIt) {
  const std::string dir = Fresh("release");
  std::filesystem::create_directories(dir);
  ReleaseRequests requests(dir);
  EXPECT_FALSE(requests.Take().has_value());
  std::ofstream(dir + "/release.request") << "  3\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // one look per 200 ms
  const auto what = requests.Take();
  ASSERT_TRUE(what.has_value());
  EXPECT_EQ(*what, "3");
  EXPECT_FALSE(std::filesystem::exists(dir + "/release.request"));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_FALSE(requests.Take().has_value());
  requests.Answer("released worker 3");
  EXPECT_EQ(Read(dir + "/release.answer"), "released worker 3\n");
}

// Prometheus' text exposition: HELP and TYPE once per metric, then its samples; the evaluation
// only once there was one; staleness only where the workers report it.
TEST(JobMetrics, RendersTheTextExpositionFormat) {
  JobMetrics m(/*per_worker=*/true);
  JobGauges g;
  g.mode = "sync";
  g.phase = "training";
  g.step = 12;
  g.workers_live = 2;
  m.SetJob(g);
  TrainReport r;
  r.worker = 1;
  r.step = 12;
  r.accumulation = 3;
  m.Observe(r);
  std::string text = m.Text();
  EXPECT_NE(text.find("# HELP tteps_step The step every live worker has completed.\n"
                      "# TYPE tteps_step gauge\ntteps_step 12\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tteps_job_phase{mode=\"sync\",phase=\"training\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("tteps_worker_accumulation{worker=\"1\"} 3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("tteps_eval_mape"), std::string::npos);
  EXPECT_EQ(text.find("tteps_worker_staleness"), std::string::npos);
  m.SetEval(10, 0.25);
  r.exchange = {{"staleness", 1.5}};
  m.Observe(r);
  text = m.Text();
  EXPECT_NE(text.find("tteps_eval_mape 0.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tteps_worker_staleness{worker=\"1\"} 1.5\n"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

TrainReport Report(int worker, int64_t step, double loss, double trips_per_s) {
  TrainReport r;
  r.worker = worker;
  r.step = step;
  r.loss = loss;
  r.trips_per_s = trips_per_s;
  r.step_losses.assign(10, loss);
  return r;
}

// Beyond --worker_series a job's outputs grow with its steps, not with steps x workers: one
// train_workers line a job step (the live workers' min, median and max), no line, series or
// gauge per worker; the lost workers leave the spread.
TEST(LiveOutputs, BeyondTheWorkerSeriesALineAStepSaysHowTheWorkersSpread) {
  const std::string dir = Fresh("spread");
  WorkerBook book;
  {
    RunOutput out(dir);
    LiveOutputs live(&out, /*per_worker=*/false);
    EXPECT_FALSE(live.per_worker());
    for (int step : {10, 20}) {
      for (int w = 0; w < (step == 10 ? 5 : 4); ++w) {
        const TrainReport r = Report(w, step, 1.0 + w, 100.0 * (5 - w) + step);
        book.Add(w, r);
        live.Train(r);
      }
      for (int twice = 0; twice < 2; ++twice) {  // once a step
        live.JobStep(book.LiveMinStep(), book.LiveMeanLoss(), book.LiveTripsPerSecond(), 1.0,
                     [&] { return book.LiveSpread(); });
      }
      if (step == 10) book.Lose(4);  // the slowest, before the second step's spread
    }
  }
  std::istringstream lines(Read(dir + "/metrics.jsonl"));
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) got.push_back(line);
  ASSERT_EQ(got.size(), 2u) << Read(dir + "/metrics.jsonl");
  EXPECT_NE(got[0].find("\"type\":\"train_workers\",\"step\":10,"), std::string::npos) << got[0];
  EXPECT_NE(got[0].find("\"workers\":5,\"loss_min\":1,\"loss_median\":3,\"loss_max\":5,"),
            std::string::npos)
      << got[0];
  EXPECT_NE(got[0].find("\"trips_per_s_min\":110,"), std::string::npos) << got[0];
  EXPECT_NE(got[0].find("\"slowest_worker\":4"), std::string::npos) << got[0];
  EXPECT_NE(got[1].find("\"step\":20,"), std::string::npos) << got[1];
  EXPECT_NE(got[1].find("\"workers\":4,"), std::string::npos) << got[1];
  EXPECT_NE(got[1].find("\"slowest_worker\":3"), std::string::npos) << got[1];
}

TEST(JobMetrics, BeyondTheWorkerSeriesGaugesSayHowTheWorkersSpread) {
  JobMetrics m(/*per_worker=*/false);
  m.Observe(Report(1, 10, 0.5, 200));
  WorkerSpread s;
  s.workers = 3;
  s.loss_min = 0.25;
  s.loss_median = 0.5;
  s.loss_max = 1;
  s.speed_min = 100;
  s.speed_median = 200;
  s.speed_max = 300;
  s.slowest = 2;
  m.SetSpread(s);
  const std::string text = m.Text();
  EXPECT_EQ(text.find("tteps_worker_"), std::string::npos) << text;
  EXPECT_NE(text.find("tteps_workers_loss{stat=\"median\"} 0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tteps_workers_trips_per_second{stat=\"min\"} 100\n"), std::string::npos);
  EXPECT_NE(text.find("tteps_slowest_worker 2\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace tteps::scheduler
