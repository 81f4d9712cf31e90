// The parameter server end to end in one process: a ParamServer on a ROUTER socket served by a
// thread, and KVClients (workers 0 and 1) talking to it over tcp loopback.
#include "server/param_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/codec.h"
#include "common/kv_client.h"
#include "server/optimizer.h"

namespace tteps::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int64_t kN = 1031;  // not a multiple of a vector width
constexpr uint64_t kFingerprint = 0x5EED5EEDF00DULL;
constexpr double kLr = 0.5;
constexpr double kClientTimeoutS = 5.0;  // longer than the server's, so its errors come first

KVClientOptions Timeout(double s) {
  KVClientOptions o;
  o.timeout_s = s;
  return o;
}

// The requests these tests make, each sent and awaited (KVClient::Call).
void Init(KVClient& c, const float* values) { c.Call(KVRequest::Init(values, c.total())); }
void Push(KVClient& c, std::shared_ptr<const std::vector<float>> grad, std::vector<KeyRange> spans,
          const PushMeta& meta) {
  c.Call(KVRequest::Push(std::move(grad), std::move(spans), meta));
}
PullResult Pull(KVClient& c, int64_t want, float* out, std::vector<KeyRange> spans = {}) {
  return c.Call(KVRequest::Pull(want, out, std::move(spans)));
}
PullResult PushPull(KVClient& c, std::shared_ptr<const std::vector<float>> grad,
                    std::vector<KeyRange> spans, const PushMeta& meta, int64_t want, float* out) {
  KVRequest r = KVRequest::Push(std::move(grad), std::move(spans), meta);
  return c.Call(std::move(r.ThenPull(want, out, {{}})));
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Values that are small dyadic rationals, so that every sum and step below is exact in float.
std::vector<float> InitValues() {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(i % 13 - 6) * 0.25f;
  return v;
}

std::shared_ptr<const std::vector<float>> Grad(int seed) {
  auto g = std::make_shared<std::vector<float>>(kN);
  for (int64_t i = 0; i < kN; ++i) {
    (*g)[i] = static_cast<float>((i * (seed + 3)) % 11 - 5) * 0.125f;
  }
  return g;
}

std::string Tail(const std::string& text, const std::string& from) {
  const size_t at = text.find(from);
  return at == std::string::npos ? std::string() : text.substr(at);
}

class ParamServerTest : public ::testing::Test {
 protected:
  void StartServer(double timeout_s, int64_t epoch = 0) {
    const std::string endpoint = BindTcp(router_, "127.0.0.1");
    map_.epoch = epoch;
    map_.config.exchange.mode = Mode::kSync;
    map_.param_count = kN;
    map_.fingerprint = kFingerprint;
    map_.ranges = {{0, kN}};
    NodeInfo server;
    server.role = Role::kServer;
    server.id = 0;
    server.host = "testhost";
    server.endpoint = endpoint;
    map_.servers = {server};
    for (int w = 0; w < 2; ++w) {
      NodeInfo worker;
      worker.role = Role::kWorker;
      worker.id = w;
      worker.host = "testhost";
      worker.pid = 100 + w;
      map_.workers.push_back(worker);
    }
    OptimizerConfig sgd;
    sgd.name = "sgd";
    sgd.lr = kLr;
    shard_ =
        std::make_unique<Shard>(KeyRange{0, kN}, Consistency::kSync, 2, 0, MakeOptimizer(sgd, kN));
    server_ = std::make_unique<ParamServer>(router_, map_, 0, shard_.get(), timeout_s);
    if (clip_norm_ > 0) {  // the scheduler's part: the global norm is what the test sets
      shard_->set_clip_norm(clip_norm_);
      server_->SetNormExchange([](int64_t, double) {},
                               [this](int64_t version) -> std::optional<double> {
                                 std::lock_guard<std::mutex> lock(norms_mu_);
                                 auto it = norms_.find(version);
                                 if (it == norms_.end()) return std::nullopt;
                                 return it->second;
                               });
    }
    RunServer();
  }

  void RunServer() {
    stop_ = false;
    thread_ = std::thread([this] {
      try {
        rollback_ = server_->Run([this] { return stop_.load(); }, &commands_);
      } catch (const std::exception& e) {
        server_failure_ = e.what();
      }
    });
  }

  // Stops and joins the server thread; afterwards the server and shard may be read safely.
  void StopServer() {
    if (!thread_.joinable()) return;
    stop_ = true;
    thread_.join();
    EXPECT_EQ(server_failure_, "") << "ParamServer::Run threw";
  }

  void TearDown() override { StopServer(); }

  std::unique_ptr<KVClient> Client(int worker, uint64_t fingerprint = kFingerprint,
                                   WireType wire = WireType::kF32) {
    ClusterMap map = map_;
    map.fingerprint = fingerprint;
    KVClientOptions o = Timeout(kClientTimeoutS);
    o.wire = wire;
    return std::make_unique<KVClient>(ctx_, map, map_.workers[worker], o);
  }

  // After two sync steps in which both workers pushed all-ones gradients of one trip each:
  // version 2 holds the initial values less two SGD steps of 1, and the server counted four
  // pushes and no error.
  void ExpectTwoStepsOfOnesThenStop(KVClient& client) {
    std::vector<float> out(kN);
    EXPECT_EQ(Pull(client, 2, out.data()).version, 2);
    const std::vector<float> init = InitValues();
    for (int64_t k = 0; k < kN; ++k) {
      EXPECT_EQ(out[k], static_cast<float>(static_cast<float>(init[k] - kLr * 1.0f) - kLr * 1.0f))
          << k;
    }
    StopServer();
    EXPECT_EQ(server_->errors(), 0);
    EXPECT_EQ(server_->Stats().pushes, 4);
  }

  zmq::context_t ctx_;
  zmq::socket_t router_ = MakeSocket(ctx_, zmq::socket_type::router);
  ClusterMap map_;
  std::unique_ptr<Shard> shard_;
  std::unique_ptr<ParamServer> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::string server_failure_;
  double clip_norm_ = 0;     // set before StartServer
  ServerCommands commands_;  // the scheduler's, as the control channel would queue them
  std::optional<ServerRemap> rollback_;
  std::mutex norms_mu_;
  std::map<int64_t, double> norms_;  // version -> global norm, as the scheduler would send
};

TEST_F(ParamServerTest, InitThenPullReturnsTheInitialValues) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  for (auto* w : {w0.get(), w1.get()}) {
    std::vector<float> out(kN, -99.0f);
    const PullResult r = Pull(*w, 0, out.data());
    EXPECT_EQ(r.version, 0);
    EXPECT_EQ(out, init);
  }
  // A second init (e.g. a restarted worker 0) does not overwrite the values.
  std::vector<float> other(kN, 42.0f);
  Init(*w0, other.data());
  std::vector<float> out(kN);
  Pull(*w1, 0, out.data());
  EXPECT_EQ(out, init);
  StopServer();
  EXPECT_EQ(server_->errors(), 0);
}

TEST_F(ParamServerTest, SyncStepAveragesPushesWeightedBySamples) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  const auto g0 = Grad(0), g1 = Grad(1);
  const int64_t n0 = 1, n1 = 3;
  Push(*w0, g0, {}, {0, n0});

  // Worker 0's pull for version 1 is held until worker 1 has pushed.
  std::vector<float> out0(kN);
  PullResult r0;
  std::string pull_error;
  std::thread puller([&] {
    try {
      r0 = Pull(*w0, 1, out0.data());
    } catch (const std::exception& e) {
      pull_error = e.what();
    }
  });
  std::this_thread::sleep_for(milliseconds(200));
  Push(*w1, g1, {}, {0, n1});
  puller.join();
  ASSERT_EQ(pull_error, "");

  std::vector<float> expected(kN);
  for (int64_t i = 0; i < kN; ++i) {
    // Exact: sums of small dyadic rationals, / 4 and * 0.5 are exact in float.
    const double mean = (static_cast<double>((*g0)[i]) + (*g1)[i]) / static_cast<double>(n0 + n1);
    expected[i] = static_cast<float>(init[i] - kLr * mean);
  }
  EXPECT_EQ(r0.version, 1);
  EXPECT_GE(r0.held_s, 0.05);  // it waited for worker 1's push
  EXPECT_EQ(out0, expected);

  std::vector<float> out1(kN);
  const PullResult r1 = Pull(*w1, 1, out1.data());
  EXPECT_EQ(r1.version, 1);
  EXPECT_LT(r1.held_s, 0.05);  // ready at once
  EXPECT_EQ(out1, expected);
  StopServer();
  EXPECT_EQ(shard_->version(), 1);
  EXPECT_EQ(server_->errors(), 0);
  EXPECT_EQ(server_->Stats().pushes, 2);
  EXPECT_NE(server_->Stats().ToJson().str().find("\"pushes\":2"), std::string::npos);
}

TEST_F(ParamServerTest, PushPullSendsThePullBehindThePushAndGetsTheNextVersion) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  const auto g0 = Grad(0), g1 = Grad(1);
  // Both workers push version 0 and pull version 1 in one exchange each.
  std::vector<float> out0(kN), out1(kN);
  PullResult r0;
  std::thread other([&] { r0 = PushPull(*w0, g0, {}, {0, 1, -1}, 1, out0.data()); });
  const PullResult r1 = PushPull(*w1, g1, {}, {0, 1, -1}, 1, out1.data());
  other.join();
  std::vector<float> expected(kN);
  for (int64_t i = 0; i < kN; ++i) {
    const double mean = (static_cast<double>((*g0)[i]) + (*g1)[i]) / 2.0;
    expected[i] = static_cast<float>(init[i] - kLr * mean);
  }
  EXPECT_EQ(r0.version, 1);
  EXPECT_EQ(r1.version, 1);
  EXPECT_EQ(out0, expected);
  EXPECT_EQ(out1, expected);
  EXPECT_GT(r0.push_s, 0);
  StopServer();
  EXPECT_EQ(server_->errors(), 0);
}

TEST_F(ParamServerTest, PullForAFutureVersionTimesOutNamingTheMissingWorkers) {
  StartServer(1.0);
  auto w0 = Client(0);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  std::vector<float> out(kN);
  const auto start = Clock::now();
  try {
    Pull(*w0, 2, out.data());
    ADD_FAILURE() << "the pull for version 2 was answered";
  } catch (const std::runtime_error& e) {
    const std::string text = e.what();
    const std::string why = Tail(text, "waited");
    EXPECT_NE(why, "") << text;
    EXPECT_NE(why.find("worker 0"), std::string::npos) << text;
    EXPECT_NE(why.find("worker 1"), std::string::npos) << text;
    EXPECT_NE(text.find("pull for 2"), std::string::npos) << text;
  }
  const double waited = Seconds(start);
  EXPECT_GE(waited, 0.95);
  EXPECT_LT(waited, 2.5);
  // The server is still serving.
  EXPECT_EQ(Pull(*w0, 0, out.data()).version, 0);
  EXPECT_EQ(out, init);
  StopServer();
  EXPECT_EQ(server_->errors(), 1);
}

TEST_F(ParamServerTest, PullBeforeInitTimesOutWaitingForTheInitialValues) {
  StartServer(0.2);
  auto w1 = Client(1);
  std::vector<float> out(kN);
  try {
    Pull(*w1, 0, out.data());
    ADD_FAILURE() << "a pull before init was answered";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("initial values from worker 0"), std::string::npos)
        << e.what();
  }
}

TEST_F(ParamServerTest, WrongFingerprintIsRefusedAndTheServerKeepsServing) {
  StartServer(1.0);
  auto w0 = Client(0), bad = Client(1, kFingerprint + 1);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  try {
    Push(*bad, Grad(1), {}, {0, 3});
    ADD_FAILURE() << "a push with a wrong fingerprint was accepted";
  } catch (const std::runtime_error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("fingerprint " + std::to_string(kFingerprint + 1)), std::string::npos)
        << text;
    EXPECT_NE(text.find(std::to_string(kFingerprint)), std::string::npos) << text;
  }
  std::vector<float> out(kN);
  EXPECT_THROW(Pull(*bad, 0, out.data()), std::runtime_error);
  EXPECT_EQ(Pull(*w0, 0, out.data()).version, 0);
  EXPECT_EQ(out, init);
  StopServer();
  EXPECT_EQ(server_->errors(), 2);
  EXPECT_EQ(shard_->version(), 0);
  EXPECT_EQ(shard_->clock(1), 0);  // the refused push was not counted
}

TEST_F(ParamServerTest, MalformedAndMisdirectedMessagesGetErrorRepliesAndServingContinues) {
  StartServer(1.0);
  auto w0 = Client(0);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());

  auto raw = MakeSocket(ctx_, zmq::socket_type::dealer);
  raw.connect(map_.servers[0].endpoint);
  auto expect_error = [&](const std::string& needle) {
    Message reply;
    ASSERT_TRUE(ReceiveMessage(raw, false, 2000, &reply));
    EXPECT_EQ(reply.header.type, MsgType::kError);
    EXPECT_EQ(reply.header.sender_role, Role::kServer);
    EXPECT_NE(reply.header.text.find(needle), std::string::npos) << reply.header.text;
  };

  // Garbage that is not a tteps header.
  raw.send(zmq::buffer(std::string("definitely not a header")), zmq::send_flags::none);
  expect_error("malformed message");

  // A well-formed push whose payload is shorter than its range.
  Header push;
  push.type = MsgType::kPush;
  push.sender_id = 0;
  push.request_id = 77;
  push.fingerprint = kFingerprint;
  push.ranges = {{0, kN}};
  auto short_payload = std::make_shared<std::vector<float>>(kN - 1, 1.0f);
  ASSERT_TRUE(SendMessage(raw, push, {{short_payload, short_payload->data(), kN - 1}}));
  expect_error("malformed message");

  // Keys this server does not hold.
  Header pull;
  pull.type = MsgType::kPull;
  pull.sender_id = 0;
  pull.request_id = 78;
  pull.fingerprint = kFingerprint;
  pull.ranges = {{0, kN + 1}};
  ASSERT_TRUE(SendMessage(raw, pull));
  expect_error("holds [0, " + std::to_string(kN) + ")");

  // A message type a server does not take; the reply echoes the request id.
  Header heartbeat;
  heartbeat.type = MsgType::kHeartbeat;
  heartbeat.request_id = 79;
  ASSERT_TRUE(SendMessage(raw, heartbeat));
  {
    Message reply;
    ASSERT_TRUE(ReceiveMessage(raw, false, 2000, &reply));
    EXPECT_EQ(reply.header.type, MsgType::kError);
    EXPECT_EQ(reply.header.request_id, 79u);
    EXPECT_NE(reply.header.text.find("unexpected heartbeat"), std::string::npos);
  }

  // A push from a worker id outside the job.
  Header stranger = push;
  stranger.sender_id = 5;
  stranger.request_id = 80;
  auto full = std::make_shared<std::vector<float>>(kN, 1.0f);
  ASSERT_TRUE(SendMessage(raw, stranger, {{full, full->data(), kN}}));
  expect_error("unknown worker 5");

  std::vector<float> out(kN);
  EXPECT_EQ(Pull(*w0, 0, out.data()).version, 0);
  EXPECT_EQ(out, init);
  StopServer();
  EXPECT_EQ(server_->errors(), 5);
  EXPECT_EQ(shard_->version(), 0);
}

TEST_F(ParamServerTest, PoisonedPushesAreRefusedCountedAndTheStepStillCompletes) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  const std::vector<float> init = InitValues();
  auto inf_init = std::make_shared<std::vector<float>>(init);
  (*inf_init)[kN - 1] = INFINITY;
  EXPECT_THROW(Init(*w0, inf_init->data()), std::runtime_error);
  Init(*w0, init.data());

  // A well-formed push claiming worker 1's place, with NaN in it: refused, naming the key.
  auto nan_grad = std::make_shared<std::vector<float>>(*Grad(1));
  (*nan_grad)[500] = std::nanf("");
  try {
    Push(*w1, nan_grad, {}, {0, 3});
    ADD_FAILURE() << "a NaN push was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("at key 500"), std::string::npos) << e.what();
  }
  // More trips than one step can hold (the default global batch of 64, accumulation 1).
  try {
    Push(*w1, Grad(1), {}, {0, 65});
    ADD_FAILURE() << "a push of 65 trips was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("more than a step can hold (64)"), std::string::npos)
        << e.what();
  }
  // The refusals left worker 1's place free: the real pushes make the step.
  const auto g0 = Grad(0), g1 = Grad(1);
  Push(*w0, g0, {}, {0, 1});
  Push(*w1, g1, {}, {0, 3});
  std::vector<float> out(kN);
  EXPECT_EQ(Pull(*w0, 1, out.data()).version, 1);
  for (int64_t i = 0; i < kN; ++i) {
    const double mean = (static_cast<double>((*g0)[i]) + (*g1)[i]) / 4.0;
    ASSERT_EQ(out[i], static_cast<float>(init[i] - kLr * mean)) << i;
  }
  StopServer();
  EXPECT_EQ(server_->errors(), 3);
  EXPECT_EQ(server_->Stats().non_finite, 2);
  EXPECT_NE(server_->Stats().ToJson().str().find("\"non_finite\":2"), std::string::npos);
}

// The scheduler's commands reach the serving loop through one queue, between requests: a lost
// worker's pushes are refused from then on; a rollback
// ends the epoch's serving, carrying the losses to the next epoch's server.
TEST_F(ParamServerTest, QueuedCommandsDropALostWorkerAndARollbackEndsTheEpoch) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  View lost;
  lost.number = 1;
  lost.lost_workers = {1};
  commands_.Follow(lost);
  Push(*w0, Grad(0), {}, {0, 1});
  try {
    Push(*w1, Grad(1), {}, {0, 3});
    ADD_FAILURE() << "a lost worker's push was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("declared lost"), std::string::npos) << e.what();
  }
  View rollback = lost;
  rollback.number = 2;
  rollback.map_epoch = 1;
  rollback.remap = RemapOf(map_);
  rollback.remap->epoch = 1;
  commands_.Follow(rollback);
  thread_.join();  // Run returns by itself
  ASSERT_TRUE(rollback_.has_value());
  EXPECT_EQ(rollback_->epoch, 1);
  EXPECT_EQ(server_->carried().dropped, std::vector<int>{1});
  EXPECT_EQ(server_->errors(), 1);
}

// Sparse rows: a push of some keys and a pull of some keys, through the KV client. The pull
// fills only the keys asked for; the step equals the dense step with zeros elsewhere.
TEST_F(ParamServerTest, SparsePushAndPullMoveOnlyTheNamedKeys) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  const std::vector<KeyRange> spans0 = {{0, 10}, {500, 516}}, spans1 = {{5, 20}, {1030, kN}};
  const auto g0 = Grad(0), g1 = Grad(1);
  Push(*w0, g0, spans0, {0, 2});
  Push(*w1, g1, spans1, {0, 2});
  std::vector<float> out(kN, -99.f);
  const std::vector<KeyRange> wanted = {{3, 8}, {1000, 1010}};
  const PullResult r = Pull(*w0, 1, out.data(), wanted);
  EXPECT_EQ(r.version, 1);
  const auto in = [](const std::vector<KeyRange>& spans, int64_t k) {
    for (const auto& s : spans) {
      if (k >= s.begin && k < s.end) return true;
    }
    return false;
  };
  for (int64_t k = 0; k < kN; ++k) {
    const double sum = (in(spans0, k) ? (*g0)[k] : 0.0) + (in(spans1, k) ? (*g1)[k] : 0.0);
    const float expected = static_cast<float>(init[k] - kLr * sum / 4);
    EXPECT_EQ(out[k], in(wanted, k) ? expected : -99.f) << "key " << k;
  }
  EXPECT_EQ(w0->bytes_pushed(), 26 * 4);
  EXPECT_EQ(w0->bytes_pulled(), 15 * 4);
  EXPECT_EQ(server_->errors(), 0);
}

// --wire_dtype bf16: pushes and pull replies carry bfloat16; the server keeps float32. Values
// here are exact in bf16 (few mantissa bits), so the step is exact too.
TEST_F(ParamServerTest, Bf16PushesAndPullsStepAsFloat32) {
  StartServer(1.0);
  auto w0 = Client(0, kFingerprint, WireType::kBf16), w1 = Client(1, kFingerprint, WireType::kBf16);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  const auto g0 = Grad(0), g1 = Grad(1);
  Push(*w0, g0, {}, {0, 1});
  Push(*w1, g1, {{0, 100}}, {0, 1});
  std::vector<float> out(kN, -99.f);
  Pull(*w0, 1, out.data());
  for (int64_t k = 0; k < kN; ++k) {
    const double sum = (*g0)[k] + (k < 100 ? (*g1)[k] : 0.0);
    EXPECT_EQ(out[k], static_cast<float>(init[k] - kLr * sum / 2)) << "key " << k;
  }
  EXPECT_EQ(w0->bytes_pushed(), kN * 2);
  EXPECT_EQ(w0->bytes_pulled(), kN * 2);
  EXPECT_EQ(server_->errors(), 0);
}

// A staged pull: the wait returns with stage 0 in place, each later stage lands when awaited
// (or when the client next sends anything), and keys outside the stages are left alone.
TEST_F(ParamServerTest, StagedPullFillsEachStageWhenAwaited) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  const auto g0 = Grad(0), g1 = Grad(1);
  const std::vector<std::vector<KeyRange>> stages = {
      {{0, 10}}, {{10, 500}, {600, 700}}, {{1000, kN}}};
  std::vector<float> out0(kN, -99.f), out1(kN);
  KVRequest empty_stage = KVRequest::Push(g0, {}, {0, 1, -1});
  empty_stage.ThenPull(1, out0.data(), {{{0, 1}}, {}});
  EXPECT_THROW(w0->Send(empty_stage), std::invalid_argument);
  KVRequest nowhere = KVRequest::Push(g0, {}, {0, 1, -1});
  nowhere.stages = stages;  // a pull without its `out`
  EXPECT_THROW(w0->Send(nowhere), std::invalid_argument);
  PullResult r0;
  KVTicket t0;
  std::thread other([&] {
    KVRequest staged = KVRequest::Push(g0, {}, {0, 1, -1});
    t0 = w0->Send(std::move(staged.ThenPull(1, out0.data(), stages)));
    r0 = w0->Wait(t0);
  });
  PushPull(*w1, g1, {}, {0, 1, -1}, 1, out1.data());
  other.join();
  EXPECT_EQ(r0.version, 1);
  const auto in = [](const std::vector<KeyRange>& spans, int64_t k) {
    for (const auto& r : spans) {
      if (k >= r.begin && k < r.end) return true;
    }
    return false;
  };
  const auto check = [&](size_t stages_in) {
    for (int64_t k = 0; k < kN; ++k) {
      bool pulled = false;
      for (size_t i = 0; i < stages_in; ++i) pulled = pulled || in(stages[i], k);
      EXPECT_EQ(out0[k], pulled ? out1[k] : -99.f) << "key " << k << ", stages in " << stages_in;
    }
  };
  check(1);
  w0->Wait(t0, 1);
  check(2);
  EXPECT_EQ(w0->Wait(t0, 0).version, 1);  // already in: nothing happens
  EXPECT_THROW(w0->Wait(t0, 3), std::logic_error);
  // The next request first takes in the stage not awaited.
  std::vector<float> again(kN);
  const KVTicket t1 = w0->Send(KVRequest::Pull(1, again.data()));
  check(3);
  EXPECT_EQ(w0->Wait(t1).version, 1);
  EXPECT_EQ(again, out1);
  EXPECT_EQ(w0->Wait(t1).version, 1);               // the last one completed: its result again
  EXPECT_THROW(w0->Wait(t0, 2), std::logic_error);  // that pull is over
  StopServer();
  EXPECT_EQ(server_->errors(), 0);
}

// The KV client's parts: sent without waiting, acknowledged within the push that completes them.
TEST_F(ParamServerTest, PushPartsAndTheirCompletingPushStepOnce) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  const std::vector<float> init = InitValues();
  Init(*w0, init.data());
  const auto g0 = Grad(0), g1 = Grad(1);
  w0->PushPart(g0, {{500, kN}}, 0);
  w0->PushPart(g0, {{100, 500}}, 0);
  Push(*w0, g0, {{0, 100}}, {0, 1});
  Push(*w1, g1, {}, {0, 1});
  std::vector<float> out(kN);
  EXPECT_EQ(Pull(*w1, 1, out.data()).version, 1);
  for (int64_t k = 0; k < kN; ++k) {
    EXPECT_EQ(out[k], static_cast<float>(init[k] - kLr * ((*g0)[k] + (*g1)[k]) / 2)) << k;
  }
  StopServer();
  EXPECT_EQ(server_->Stats().pushes, 2);  // parts count with their push
  EXPECT_EQ(server_->errors(), 0);
}

// A request of an earlier epoch of the cluster map (sent before a rollback) is refused; the
// server keeps serving its own.
TEST_F(ParamServerTest, RequestsOfAnEarlierEpochAreRefused) {
  StartServer(1.0, /*epoch=*/1);
  auto w0 = Client(0);
  Init(*w0, InitValues().data());
  ClusterMap old = map_;
  old.epoch = 0;
  KVClient stale(ctx_, old, map_.workers[1], Timeout(kClientTimeoutS));
  std::vector<float> out(kN);
  try {
    Pull(stale, 0, out.data());
    ADD_FAILURE() << "a pull of epoch 0 was answered";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("a request of epoch 0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Pull(*w0, 0, out.data()).version, 0);
  StopServer();
  EXPECT_EQ(server_->errors(), 1);
}

// A worker may hear of a rollback before a server does: its request of the later epoch is
// held, and the server of that epoch answers it (as tteps-server's loop hands it over).
TEST_F(ParamServerTest, ARequestOfALaterEpochIsAnsweredOnceTheServerServesIt) {
  StartServer(1.0);
  auto w0 = Client(0);
  Init(*w0, InitValues().data());
  ClusterMap next = map_;
  next.epoch = 1;
  KVClient early(ctx_, next, map_.workers[1], Timeout(kClientTimeoutS));
  std::vector<float> out(kN, -1.0f);
  std::thread pull([&] { EXPECT_EQ(Pull(early, 0, out.data()).version, 0); });
  // The old epoch's server holds the pull (never answers it); restarted until it has it.
  std::vector<Message> held;
  for (int tries = 0; held.empty() && tries < 500; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    StopServer();
    held = server_->TakeHeld();
    if (held.empty()) RunServer();
  }
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].header.epoch, 1);
  EXPECT_EQ(server_->errors(), 0);
  server_ = std::make_unique<ParamServer>(router_, next, 0, shard_.get(), 1.0);
  for (Message& m : held) server_->Handle(m);
  RunServer();
  pull.join();
  EXPECT_EQ(out, InitValues());
  StopServer();
  EXPECT_EQ(server_->errors(), 0);
}

// --replicas with clipping: a worker may pull the next version from a replica that had its
// global norm first and push it here while this server still waits for the norm. The push is
// held, then counted once the norm has come.
TEST_F(ParamServerTest, APushOfTheNextVersionWaitsForThisVersionsNorm) {
  clip_norm_ = 100.0;  // above the gradients' norm: no scaling
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  Init(*w0, InitValues().data());
  auto g = std::make_shared<const std::vector<float>>(std::vector<float>(kN, 1.0f));
  Push(*w0, g, {}, {0, 1, 1.0});
  Push(*w1, g, {}, {0, 1, 1.0});
  std::atomic<bool> acked{false};
  std::thread next([&] {
    Push(*w0, g, {}, {1, 1, 1.0});
    acked = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(acked.load());  // held: version 0 waits for its norm
  {
    std::lock_guard<std::mutex> lock(norms_mu_);
    norms_[0] = 1.0;
  }
  next.join();
  Push(*w1, g, {}, {1, 1, 1.0});
  {
    std::lock_guard<std::mutex> lock(norms_mu_);
    norms_[1] = 1.0;
  }
  ExpectTwoStepsOfOnesThenStop(*w1);
}

// Sync with --replicas: a worker may pull the next version from a replica that completed the
// step first and push it here before this server has the step's last push (it comes over
// another connection). The push is held, then counted once the step is complete.
TEST_F(ParamServerTest, ASyncPushOfTheNextVersionWaitsForThisStepsLastPush) {
  StartServer(1.0);
  auto w0 = Client(0), w1 = Client(1);
  Init(*w0, InitValues().data());
  auto g = std::make_shared<const std::vector<float>>(std::vector<float>(kN, 1.0f));
  Push(*w0, g, {}, {0, 1, 1.0});
  std::atomic<bool> acked{false};
  std::thread next([&] {
    Push(*w0, g, {}, {1, 1, 1.0});
    acked = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(acked.load());  // held: version 0 waits for worker 1's push
  Push(*w1, g, {}, {0, 1, 1.0});
  next.join();
  Push(*w1, g, {}, {1, 1, 1.0});
  ExpectTwoStepsOfOnesThenStop(*w1);
}

// --replicas 2 in one process: two servers hold the whole range. A client pushes to both and
// pulls from the first; once that one is declared lost (it stops serving here, as if killed),
// the pull waiting on it is asked of the replica, which holds every push already.
TEST(ReplicatedServers, PushesReachBothAndAPullWaitingOnALostServerIsAnsweredByItsReplica) {
  zmq::context_t ctx;
  ClusterMap map;
  map.config.exchange.mode = Mode::kSync;
  map.param_count = kN;
  map.fingerprint = kFingerprint;
  map.ranges = {{0, kN}, {0, kN}};
  OptimizerConfig sgd;
  sgd.name = "sgd";
  sgd.lr = kLr;
  struct Replica {
    zmq::socket_t router;
    std::unique_ptr<Shard> shard;
    std::unique_ptr<ParamServer> server;
    std::atomic<bool> stop{false};
    std::thread thread;
  };
  std::vector<std::unique_ptr<Replica>> replicas;
  for (int s = 0; s < 2; ++s) {
    auto r = std::make_unique<Replica>();
    r->router = MakeSocket(ctx, zmq::socket_type::router);
    NodeInfo server;
    server.role = Role::kServer;
    server.id = s;
    server.host = "testhost";
    server.endpoint = BindTcp(r->router, "127.0.0.1");
    map.servers.push_back(server);
    replicas.push_back(std::move(r));
  }
  for (int w = 0; w < 2; ++w) {
    NodeInfo worker;
    worker.role = Role::kWorker;
    worker.id = w;
    worker.host = "testhost";
    map.workers.push_back(worker);
  }
  for (int s = 0; s < 2; ++s) {
    Replica& r = *replicas[s];
    r.shard =
        std::make_unique<Shard>(KeyRange{0, kN}, Consistency::kSync, 2, 0, MakeOptimizer(sgd, kN));
    r.server = std::make_unique<ParamServer>(r.router, map, s, r.shard.get(), 1.0);
    r.thread = std::thread([&r] { r.server->Run([&r] { return r.stop.load(); }); });
  }
  LostServers lost;
  KVClientOptions o0, o1;
  o0.timeout_s = kClientTimeoutS;
  o1.timeout_s = 5.0;
  o0.lost_servers = o1.lost_servers = &lost;
  KVClient w0(ctx, map, map.workers[0], o0), w1(ctx, map, map.workers[1], o1);
  const std::vector<float> init = InitValues();
  Init(w0, init.data());
  std::vector<float> out0(kN), out1(kN);
  std::thread other([&] { PushPull(w0, Grad(0), {}, {0, 1, -1}, 1, out0.data()); });
  PushPull(w1, Grad(1), {}, {0, 1, -1}, 1, out1.data());
  other.join();
  EXPECT_EQ(out0, out1);
  // Step 2: worker 1 pushes; worker 0's pull waits at server 0, which then stops serving.
  Push(w1, Grad(2), {}, {1, 1});
  replicas[0]->stop = true;
  replicas[0]->thread.join();
  PullResult r0;
  std::string error;
  std::thread puller([&] {
    try {
      r0 = PushPull(w0, Grad(3), {}, {1, 1, -1}, 2, out0.data());
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(milliseconds(300));
  lost.Add(0);
  puller.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(r0.version, 2);
  // Worker 1 now reads from server 1 alone, and gets the same version 2.
  EXPECT_EQ(Pull(w1, 2, out1.data()).version, 2);
  EXPECT_EQ(out0, out1);
  std::vector<float> expected = init;
  for (int step = 0; step < 2; ++step) {
    const auto a = Grad(2 * step), b = Grad(2 * step + 1);
    for (int64_t k = 0; k < kN; ++k) {
      expected[k] = static_cast<float>(expected[k] - kLr * ((*a)[k] + (*b)[k]) / 2);
    }
  }
  EXPECT_EQ(out0, expected);
  replicas[1]->stop = true;
  replicas[1]->thread.join();
  EXPECT_EQ(replicas[1]->shard->version(), 2);
  EXPECT_EQ(replicas[0]->shard->version(), 1);  // it stopped before worker 0's second push
  EXPECT_EQ(replicas[1]->server->errors(), 0);
}

// Async with --replicas 2, the servers' loops driven by hand: the backup gets the same pushes
// as the primary in another order, and the primary's order (kOrder) as it goes. Both end
// bit-identical, where a replica applying pushes in arrival order does not (Adam's state makes
// the order matter). A worker the primary drops is dropped where its order says so, and a late
// push of it, refused by the primary, is never applied by the backup; a worker that joins in
// its place counts where the order says, whichever of the order and the scheduler's word comes
// first. Once the primary is lost, the backup applies the pushes it holds, gives the places
// and drops the workers its primary had not ordered yet, and leads.
TEST(OrderedReplicas, ABackupAppliesPushesInItsPrimarysOrderAndEndsBitIdentical) {
  zmq::context_t ctx;
  ClusterMap map;
  map.config.exchange.mode = Mode::kAsync;
  map.config.train.batch_size = 8;
  map.param_count = kN;
  map.fingerprint = kFingerprint;
  map.ranges = {{0, kN}, {0, kN}};
  for (int s = 0; s < 2; ++s) {
    NodeInfo server;
    server.role = Role::kServer;
    server.id = s;
    map.servers.push_back(server);
  }
  for (int w = 0; w < 3; ++w) {
    NodeInfo worker;
    worker.role = Role::kWorker;
    worker.id = w;
    map.workers.push_back(worker);
  }
  OptimizerConfig adam;
  adam.name = "adam";
  adam.lr = 0.01;
  struct Replica {
    Replica(zmq::context_t& ctx, const ClusterMap& map, int id, const OptimizerConfig& o)
        : router(MakeSocket(ctx, zmq::socket_type::router)),
          shard(KeyRange{0, kN}, Consistency::kAsync, 3, 0, MakeOptimizer(o, kN)),
          server(router, map, id, &shard, 1.0) {
      const std::vector<float> init = InitValues();
      shard.Init(init.data());
    }
    zmq::socket_t router;
    Shard shard;
    ParamServer server;
  };
  Replica primary(ctx, map, 0, adam), backup(ctx, map, 1, adam), arrival(ctx, map, 1, adam);
  std::vector<Message> orders;  // sent by the primary, not delivered yet
  primary.server.SetOrderLink([&](int to, const Header& h) {
    EXPECT_EQ(to, 1);
    Message m;
    m.header = h;
    orders.push_back(std::move(m));
    return true;
  });
  backup.server.SetOrderLink([&](int, const Header&) {
    EXPECT_FALSE(backup.server.following()) << "a backup sent an order";
    return true;
  });
  EXPECT_FALSE(primary.server.following());
  EXPECT_TRUE(backup.server.following());
  // Worker w's push number k: gradients that are not dyadic, so that rounding shows the order.
  const auto push = [](int w, int k, int slot = -1) {
    Message m;
    m.header.type = MsgType::kPush;
    m.header.sender_role = Role::kWorker;
    m.header.sender_id = w;
    m.header.slice = slot;
    m.header.fingerprint = kFingerprint;
    m.header.samples = 3;
    m.header.ranges = {{0, kN}};
    std::vector<float> g(kN);
    for (int64_t i = 0; i < kN; ++i) g[i] = std::sin(0.37f * static_cast<float>(i * (w + 1) + k));
    m.payloads.emplace_back(g.data(), g.size() * sizeof(float));
    return m;
  };
  const auto to = [&](Replica& r, int w, int k, int slot = -1) {
    Message m = push(w, k, slot);
    r.server.Handle(m);
  };
  const auto deliver = [&](size_t n) {
    for (size_t i = 0; i < n && !orders.empty(); ++i) {
      backup.server.Handle(orders.front());
      orders.erase(orders.begin());
    }
  };
  const int sequence[][2] = {{0, 1}, {1, 1}, {2, 1}, {0, 2}, {1, 2}, {2, 2}};
  const int other[][2] = {{2, 1}, {1, 1}, {1, 2}, {0, 1}, {2, 2}, {0, 2}};  // each worker in order
  for (const auto& p : sequence) to(primary, p[0], p[1]);
  for (int i = 0; i < 6; ++i) {
    to(backup, other[i][0], other[i][1]);
    to(arrival, other[i][0], other[i][1]);
    if (i % 2 == 1) deliver(2);  // entries both before and after their pushes
  }
  deliver(orders.size());
  EXPECT_EQ(backup.shard.version(), 6);
  EXPECT_EQ(backup.shard.StateHash(), primary.shard.StateHash());
  EXPECT_EQ(arrival.shard.version(), 6);
  EXPECT_NE(arrival.shard.StateHash(), primary.shard.StateHash()) << "the order did not matter";

  // Worker 2 is dropped by the primary first; its late push reaches both, the primary refuses
  // it, the backup holds it and never applies it.
  primary.server.DropWorker(2);
  to(primary, 0, 3);
  to(primary, 2, 3);
  EXPECT_EQ(primary.server.errors(), 1);
  to(backup, 2, 3);
  to(backup, 0, 3);
  deliver(orders.size());
  EXPECT_TRUE(backup.shard.dropped(2));
  backup.server.DropWorker(2);  // the scheduler's word, later
  EXPECT_EQ(backup.shard.version(), 7);
  EXPECT_EQ(backup.shard.StateHash(), primary.shard.StateHash());

  // Worker 5 joins in worker 2's place (at its clock 2). Its first push reaches the backup
  // before the scheduler's word that it joined (held until then) and counts where the
  // primary's order says; worker 2's own late push there is never taken for it.
  primary.server.Rejoin(2, 5, 2);
  to(primary, 5, 1, 2);
  to(backup, 5, 1, 2);
  EXPECT_EQ(primary.shard.clock(2), 3);
  EXPECT_EQ(backup.shard.version(), 7);
  backup.server.Rejoin(2, 5, 2);
  deliver(orders.size());
  EXPECT_EQ(backup.shard.version(), 8);
  EXPECT_EQ(backup.shard.clock(2), 3);
  EXPECT_EQ(backup.shard.StateHash(), primary.shard.StateHash());

  // Worker 2 was only stopped: its next push is refused by the primary although its place is
  // no longer dropped (the backup holds it and never applies it).
  to(primary, 2, 4);
  EXPECT_EQ(primary.server.errors(), 2);
  to(backup, 2, 4);
  deliver(orders.size());
  EXPECT_EQ(primary.shard.clock(2), 3);
  EXPECT_EQ(backup.shard.StateHash(), primary.shard.StateHash());

  // Joiner 5 is lost and worker 6 joins for the place at clock 3. The backup gets the primary's
  // entries of both before the scheduler's words (and 6's push in between): it gives the place
  // once, and 6's push counts.
  primary.server.DropWorker(5);
  primary.server.Rejoin(2, 6, 3);
  to(primary, 6, 1, 2);
  deliver(orders.size());
  to(backup, 6, 1, 2);
  backup.server.DropWorker(5);
  backup.server.Rejoin(2, 6, 3);
  EXPECT_EQ(primary.shard.clock(2), 4);
  EXPECT_EQ(backup.shard.clock(2), 4);
  EXPECT_EQ(backup.shard.version(), 9);
  EXPECT_EQ(backup.shard.StateHash(), primary.shard.StateHash());

  // Joiner 6 is lost, worker 7 joins at clock 4; the primary applies one more push and is lost
  // before any entry of these reaches the backup, and 7 is lost too. The promoted backup applies
  // the push it holds, gives the place to 7 where the scheduler said, then drops it.
  primary.server.DropWorker(6);
  primary.server.Rejoin(2, 7, 4);
  to(primary, 1, 3);
  to(backup, 1, 3);
  orders.clear();
  backup.server.DropWorker(6);
  backup.server.Rejoin(2, 7, 4);
  backup.server.DropWorker(7);
  EXPECT_EQ(backup.shard.version(), 9);
  backup.server.LoseServer(0);
  EXPECT_FALSE(backup.server.following());
  EXPECT_EQ(backup.shard.version(), 10);
  EXPECT_TRUE(backup.shard.dropped(2));
  EXPECT_EQ(backup.shard.clock(2), 4);
  EXPECT_EQ(backup.shard.StateHash(), primary.shard.StateHash());
  EXPECT_EQ(backup.server.errors(), 0);
  EXPECT_EQ(backup.server.Stats().pushes, 10);
  // A push of the lost joiner that comes late is refused by the new primary.
  to(backup, 7, 1, 2);
  EXPECT_EQ(backup.server.errors(), 1);
  EXPECT_EQ(backup.shard.version(), 10);
}

// Async with --replicas 2, the client's side: a push goes to the range's primary only once its
// backup holds it (the primary applies and names it at once), so a worker lost between the two
// sends never leaves a push that the primary applied and the backup cannot. With the backup
// lost before it answers, the primary gets the push at once.
TEST(OrderedReplicas, APushReachesThePrimaryOnceItsBackupHoldsIt) {
  zmq::context_t ctx;
  ClusterMap map;
  map.config.exchange.mode = Mode::kAsync;
  map.param_count = kN;
  map.fingerprint = kFingerprint;
  map.ranges = {{0, kN}, {0, kN}};
  std::vector<zmq::socket_t> routers;
  for (int s = 0; s < 2; ++s) {
    routers.push_back(MakeSocket(ctx, zmq::socket_type::router));
    NodeInfo server;
    server.role = Role::kServer;
    server.id = s;
    server.endpoint = BindTcp(routers.back(), "127.0.0.1");
    map.servers.push_back(server);
  }
  NodeInfo worker;
  worker.role = Role::kWorker;
  worker.id = 0;
  map.workers.push_back(worker);
  LostServers lost;
  KVClientOptions o;
  o.timeout_s = kClientTimeoutS;
  o.lost_servers = &lost;
  KVClient client(ctx, map, worker, o);
  const auto ack = [&](int s, const Message& m) {
    Header h;
    h.type = MsgType::kPushAck;
    h.sender_role = Role::kServer;
    h.sender_id = s;
    h.request_id = m.header.request_id;
    ASSERT_TRUE(SendMessage(routers[s], h, {}, m.peer));
  };
  for (const bool backup_lost : {false, true}) {
    SCOPED_TRACE(backup_lost ? "backup lost" : "backup answers");
    std::string error;
    std::thread pusher([&] {
      try {
        Push(client, Grad(backup_lost), {}, {0, 3});
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
    Message at_backup, at_primary;
    ASSERT_TRUE(ReceiveMessage(routers[1], true, 2000, &at_backup));
    EXPECT_EQ(at_backup.header.type, MsgType::kPush);
    EXPECT_FALSE(ReceiveMessage(routers[0], true, 300, &at_primary))
        << "sent before the backup held it";
    if (backup_lost) {
      lost.Add(1);
    } else {
      ack(1, at_backup);
    }
    ASSERT_TRUE(ReceiveMessage(routers[0], true, 2000, &at_primary));
    EXPECT_EQ(at_primary.header.type, MsgType::kPush);
    EXPECT_EQ(at_primary.header.request_id, at_backup.header.request_id);
    ack(0, at_primary);
    pusher.join();
    EXPECT_EQ(error, "");
  }
}

}  // namespace
}  // namespace tteps::server
