// The wire and what crosses it, on real jobs: a job on one host listens on loopback only;
// strangers' pushes are refused (a NaN one in a plain job, any one in a CURVE job) and the
// model is exactly the undisturbed one; a diverging or poisoned run fails loudly instead of
// reporting a null MAPE.
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/codec.h"
#include "common/curve.h"
#include "common/key_range.h"
#include "common/transport.h"
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
    // The scheduler's, the servers' and the workers' (for their ring neighbour).
    const size_t zmq_sockets = mode == "sync" ? 5 : 3;
    EXPECT_EQ(listening.size(), zmq_sockets) << mode;
    for (const auto& a : listening) EXPECT_EQ(a.rfind("127.0.0.1:", 0), 0u) << mode << ": " << a;
    ASSERT_TRUE(job.Wait(120)) << job.log();
    EXPECT_TRUE(WIFEXITED(job.status()) && WEXITSTATUS(job.status()) == 0) << job.log();
    EXPECT_EQ(CountOf(JobLogs(out), "listening: tcp://127.0.0.1:"), zmq_sockets) << mode;
  }
}

// What a process outside a running job (2 servers) learns from the scheduler's log: where the
// scheduler and the servers listen, and the layout a push must match.
struct JobTarget {
  std::string scheduler;
  std::vector<std::string> servers;
  std::vector<KeyRange> ranges;  // server s holds ranges[s]
  uint64_t fingerprint = 0;
};

// False if the log does not name them all yet.
bool ReadTarget(const std::string& out_dir, JobTarget* t) {
  const std::string log = ReadFile(out_dir + "/logs/scheduler-0.log");
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(scheduler at (tcp://\S+))"))) return false;
  t->scheduler = m[1];
  for (const std::string s : {"0", "1"}) {
    if (!std::regex_search(log, m, std::regex("server " + s + R"( \(.*\) at (tcp://\S+))"))) {
      return false;
    }
    t->servers.push_back(m[1]);
  }
  if (!std::regex_search(log, m, std::regex(R"(floats \([^)]*\), fingerprint ([0-9a-f]+))"))) {
    return false;
  }
  t->fingerprint = std::stoull(m[1], nullptr, 16);
  // The servers' ranges as they log them (with sparse rows they are not equal in keys).
  const std::string logs = JobLogs(out_dir);
  t->ranges.assign(2, {});
  for (int s = 0; s < 2; ++s) {
    if (!std::regex_search(
            logs, m,
            std::regex("server " + std::to_string(s) + R"( at \S+ holds \[(\d+), (\d+)\))"))) {
      return false;
    }
    t->ranges[s] = {std::stoll(m[1]), std::stoll(m[2])};
  }
  return true;
}

// A well-formed push header claiming to be worker 0.
Header StrangerPush(const JobTarget& t, int64_t samples) {
  Header push;
  push.type = MsgType::kPush;
  push.sender_role = Role::kWorker;
  push.sender_id = 0;
  push.samples = samples;
  push.fingerprint = t.fingerprint;
  return push;
}

// A process outside the job sends `count` well-formed pushes to server 0, claiming to be worker
// 0, over a socket with CURVE keys `keys` (null: plain). Returns false if it found no endpoint.
bool Intrude(const std::string& out_dir, const CurveKeys* keys, const std::string& server_key,
             float value, int count) {
  JobTarget target;
  if (!ReadTarget(out_dir, &target)) return false;
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  // A refused handshake leaves the socket without a peer, where a send would wait forever.
  dealer.set(zmq::sockopt::sndtimeo, 2000);
  if (keys) {
    dealer.set(zmq::sockopt::curve_serverkey, server_key);
    dealer.set(zmq::sockopt::curve_publickey, keys->public_key);
    dealer.set(zmq::sockopt::curve_secretkey, keys->secret_key);
  }
  dealer.connect(target.servers[0]);
  Header push = StrangerPush(target, 32);
  push.ranges = {target.ranges[0]};
  auto grad = std::make_shared<std::vector<float>>(push.ranges[0].size(), value);
  for (int i = 0; i < count; ++i) {
    push.request_id = 1000 + i;
    push.step = i;
    SendMessage(dealer, push, {{grad, grad->data(), grad->size()}});
  }
  // Every push that reaches a server gets an (error) reply; wait for them all.
  Message reply;
  for (int i = 0; i < count && ReceiveMessage(dealer, false, 1000, &reply); ++i) {
  }
  return true;
}

// Floods the job's scheduler and servers with `count` bad messages, in turn: garbage, a push
// whose payload differs from its declared size, a truncated header, a header declaring a payload
// of a terabyte, a heartbeat from a stranger; and, rarely (they are 1.4 MB each), well-formed
// pushes for a step that never comes or holding NaN (counted in `nan_pushes`). Returns how many
// were sent.
int64_t Flood(const std::string& out_dir, int64_t count, int64_t* nan_pushes) {
  JobTarget target;
  if (!ReadTarget(out_dir, &target)) return 0;
  const std::vector<std::string> endpoints = {target.scheduler, target.servers[0],
                                              target.servers[1]};
  const auto& ranges = target.ranges;
  zmq::context_t ctx;
  std::vector<zmq::socket_t> sockets;
  for (const auto& e : endpoints) {
    sockets.emplace_back(ctx, zmq::socket_type::dealer);
    sockets.back().set(zmq::sockopt::linger, 10000);  // deliver what is queued before closing
    sockets.back().set(zmq::sockopt::sndtimeo, 2000);
    sockets.back().connect(e);
  }
  const Header push = StrangerPush(target, 8);
  const std::string valid = EncodeHeader(push);
  int64_t sent = 0;
  for (int64_t i = 0; i < count; ++i) {
    const size_t target = i % 3;  // 0: the scheduler
    zmq::socket_t& s = sockets[target];
    Header h = push;
    h.request_id = i;
    bool ok = true;
    switch (i % 5) {
      case 0:
        ok = s.send(zmq::buffer(std::string(37, static_cast<char>(i))), zmq::send_flags::none)
                 .has_value();
        break;
      case 1: {
        h.ranges = {ranges[target == 2 ? 1 : 0]};
        auto few = std::make_shared<std::vector<float>>(5, 1.0f);
        h.payload_bytes = {h.ranges[0].size() * sizeof(float)};  // declared, not sent
        const std::string header = EncodeHeader(h);
        ok = s.send(zmq::buffer(header), zmq::send_flags::sndmore).has_value() &&
             s.send(zmq::buffer(*few), zmq::send_flags::none).has_value();
        break;
      }
      case 2:
        ok = s.send(zmq::buffer(valid.substr(0, valid.size() / 2)), zmq::send_flags::none)
                 .has_value();
        break;
      case 3:
        h.ranges = {ranges[0]};
        h.payload_bytes = {uint64_t{1} << 40};
        ok = s.send(zmq::buffer(EncodeHeader(h)), zmq::send_flags::none).has_value();
        break;
      default:
        if (target != 0 && i % 500 == 4) {
          // Well-formed, full-size pushes: for step 2^40, or holding NaN.
          h.ranges = {ranges[target - 1]};
          h.step = (i / 500) % 2 ? int64_t{1} << 40 : 0;
          auto values = std::make_shared<std::vector<float>>(h.ranges[0].size(),
                                                             h.step ? 0.5f : std::nanf(""));
          ok = SendMessage(s, h, {{values, values->data(), values->size()}});
          if (ok && h.step == 0) ++*nan_pushes;
        } else {
          Header beat;
          beat.type = MsgType::kHeartbeat;
          ok = SendMessage(s, beat);
        }
    }
    if (!ok) break;  // the job has ended
    ++sent;
    // A server answers each message with an error: wait for it (ZeroMQ may drop messages from a
    // peer that leaves its replies unread, and this test counts every message).
    zmq::message_t reply;
    if (target != 0) {
      zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(2000)) <= 0) break;
      while (s.recv(reply, zmq::recv_flags::dontwait)) {
      }
    }
  }
  return sent;
}

// The same sync job (2 workers, 2 servers) plain and with CURVE; strangers push into both.
TEST(Wire, CurveJobEqualsThePlainOneAndStrangersChangeNothing) {
  const std::string dir = FreshDir("curve");
  ASSERT_EQ(RunCommand(Bin() + "/tteps-keygen " + dir + "/keys", 20, dir + "/keygen.log"), 0);
  // A flag where DIR belongs is refused, and no directory named after it appears.
  EXPECT_EQ(RunCommand("bash -c 'cd " + dir + " && " + Bin() + "/tteps-keygen --helpfull'", 20,
                       dir + "/keygen-flag.log"),
            2);
  EXPECT_FALSE(std::filesystem::exists(dir + "/--helpfull"));
  const CurveKeys cluster = LoadCurveKeys(dir + "/keys");
  GenerateCurveKeys(dir + "/stranger");
  const CurveKeys stranger = LoadCurveKeys(dir + "/stranger");
  const std::string flags = " -- --max_steps 150 --log_every 5";
  int64_t flooded = 0, flooded_nan = 0;
  const auto run = [&](const std::string& name, const std::string& launch_flags,
                       const std::string& job_flags = "") {
    const std::string out = dir + "/" + name;
    return std::make_unique<BackgroundJob>(Launcher() + " --mode sync --workers 2 --servers 2 " +
                                               launch_flags + " --out_dir " + out + flags +
                                               job_flags,
                                           out, out + ".log");
  };
  {
    // Plain: a foreign push is accepted on the wire, but NaN values are refused and counted;
    // so is a flood of 30,000 bad messages. Its workers sleep as long as they compute (a sleep
    // changes no number) so that the job outlives the flood: 100,000 took 12 s on CI and 19 s
    // on a 2-core machine (5,000 a second), longer than the unslowed job's 150 steps; and on a
    // machine slowed by its neighbours the flood slows more than the steps: three times as long.
    auto job = run("plain", "", " --slowdowns 300,300");
    ASSERT_TRUE(job->WaitForTraining(120)) << job->log();
    EXPECT_TRUE(Intrude(dir + "/plain", nullptr, "", std::nanf(""), 20));
    const auto flood_start = std::chrono::steady_clock::now();
    flooded = Flood(dir + "/plain", 30000, &flooded_nan);
    std::printf(
        "flooded %lld messages in %.1f s\n", static_cast<long long>(flooded),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - flood_start).count());
    EXPECT_EQ(flooded, 30000);
    EXPECT_EQ(flooded_nan, 20);  // one in 1,500 messages, each to a server
    ASSERT_TRUE(job->Wait(120)) << job->log();
    EXPECT_EQ(WEXITSTATUS(job->status()), 0) << job->log();
  }
  {
    // CURVE: a stranger's key is refused at the handshake, a plain client gets nowhere.
    auto job = run("curve", "--curve_dir " + dir + "/keys");
    ASSERT_TRUE(job->WaitForTraining(120)) << job->log();
    EXPECT_TRUE(Intrude(dir + "/curve", &stranger, cluster.public_key, 0.5f, 20));
    EXPECT_TRUE(Intrude(dir + "/curve", nullptr, "", 0.5f, 20));
    ASSERT_TRUE(job->Wait(120)) << job->log();
    EXPECT_EQ(WEXITSTATUS(job->status()), 0) << job->log();
  }
  const std::string plain = ReadFile(dir + "/plain/summary.json");
  const std::string curve = ReadFile(dir + "/curve/summary.json");
  std::printf("plain: %s\ncurve: %s\n", plain.c_str(), curve.c_str());
  // Every flooded message and every NaN push was refused and counted (the heartbeats, NaN
  // pushes and wrong steps that reached a server or the scheduler included).
  EXPECT_EQ(JsonNumber(plain, "messages"), flooded + 20) << plain;
  EXPECT_NE(
      plain.find("\"non_finite\":" + std::to_string(20 + flooded_nan) + ",\"unauthenticated\":0},"),
      std::string::npos)
      << plain;
  EXPECT_NE(plain.find("\"curve\":false"), std::string::npos);
  EXPECT_GE(JsonNumber(curve, "unauthenticated"), 1) << curve;
  EXPECT_EQ(JsonNumber(curve, "messages"), 0) << curve;  // nothing reached a server's decoder
  EXPECT_NE(curve.find("\"curve\":true"), std::string::npos);
  EXPECT_NE(JobLogs(dir + "/curve").find("is not in authorized_keys"), std::string::npos);
  // Both models are the undisturbed one (the servers sum in worker order).
  EXPECT_EQ(MaxAbsDiff(dir + "/plain/model_last.pt", dir + "/curve/model_last.pt"), 0.0);
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
  // The limit on trip distances (--max_trip_km) would refuse the trip as a bad record: lifted,
  // so that the evaluation itself meets the non-finite prediction.
  const std::string flags = " --max_steps 4 --max_trip_km 1e39 --eval_data " + dir + "/eval.jsonl";
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

// A message as a tteps of protocol version `version` sends it: another release keeps only the
// magic and the version where this one has them, and that is all either side reads of it.
void SendAsRelease(zmq::socket_t& socket, Header h, uint16_t version, const std::string& peer) {
  h.version = version;
  if (!peer.empty()) socket.send(zmq::buffer(peer), zmq::send_flags::sndmore);
  socket.send(zmq::buffer(EncodeHeader(h)), zmq::send_flags::none);
}

// Hosts with two releases of tteps: each side names both protocol versions within seconds. A
// node of the next release registering with this release's scheduler is answered (it can name
// the scheduler's version) and the job fails at once, saying why in summary.json; a worker of
// this release, answered by a scheduler of the release before, ends naming that version instead
// of waiting out its --timeout_s.
TEST(Wire, AProcessOfAnotherReleaseIsNamedOnBothSides) {
  const std::string dir = FreshDir("other_release");
  zmq::context_t ctx;
  const std::string at = "tcp://127.0.0.1:" + std::to_string(FreePort());
  BackgroundJob scheduler(Bin() + "/tteps-scheduler --mode sync --num_servers 1 --num_workers 1" +
                              " --max_steps 5 --timeout_s 30 --scheduler=" + at + " --out_dir " +
                              dir + "/job --logs " + dir + "/job/logs",
                          dir + "/job", dir + "/scheduler.log");
  zmq::socket_t newer(ctx, zmq::socket_type::dealer);
  newer.set(zmq::sockopt::linger, 0);
  newer.connect(at);
  Header reg;
  reg.type = MsgType::kRegister;
  const auto sent = std::chrono::steady_clock::now();
  SendAsRelease(newer, reg, kProtocolVersion + 1, "");
  Message answer;
  ASSERT_TRUE(ReceiveMessage(newer, false, 20000, &answer)) << ReadFile(dir + "/scheduler.log");
  EXPECT_EQ(answer.header.type, MsgType::kError);
  const std::string versions = "protocol version " + std::to_string(kProtocolVersion + 1) +
                               ", this scheduler version " + std::to_string(kProtocolVersion);
  EXPECT_NE(answer.header.text.find(versions), std::string::npos) << answer.header.text;
  ASSERT_TRUE(scheduler.Wait(20)) << ReadFile(dir + "/scheduler.log");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count(), 15);
  EXPECT_NE(WEXITSTATUS(scheduler.status()), 0);
  const std::string summary = ReadFile(dir + "/job/summary.json");
  EXPECT_NE(summary.find("\"status\":\"failed\""), std::string::npos) << summary;
  EXPECT_NE(summary.find(versions), std::string::npos) << summary;

  zmq::socket_t older(ctx, zmq::socket_type::router);
  older.set(zmq::sockopt::linger, 0);
  older.bind("tcp://127.0.0.1:*");
  BackgroundJob worker(Bin() + "/tteps-worker --timeout_s 30 --scheduler " +
                           older.get(zmq::sockopt::last_endpoint) + " --logs " + dir + "/logs",
                       dir, dir + "/worker.log");
  Message registration;
  ASSERT_TRUE(ReceiveMessage(older, true, 30000, &registration)) << ReadFile(dir + "/worker.log");
  EXPECT_EQ(registration.header.type, MsgType::kRegister);
  const auto answered = std::chrono::steady_clock::now();
  Header map;
  map.type = MsgType::kClusterMap;
  SendAsRelease(older, map, kProtocolVersion - 1, registration.peer);
  ASSERT_TRUE(worker.Wait(20)) << ReadFile(dir + "/worker.log");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - answered).count(), 10);
  EXPECT_TRUE(WIFEXITED(worker.status()) && WEXITSTATUS(worker.status()) != 0);
  const std::string log = ReadFile(dir + "/worker.log");
  EXPECT_NE(log.find("runs another tteps release: it speaks protocol version " +
                     std::to_string(kProtocolVersion - 1) + ", worker"),
            std::string::npos)
      << log;
}

}  // namespace
}  // namespace tteps
