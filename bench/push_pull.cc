// bench/push_pull: latency and bandwidth of a push + pull round trip through real parameter
// servers (ZeroMQ over TCP loopback, the server applying Adam in sync mode), for S servers and
// W workers, beside the raw ZeroMQ round trip of the same bytes measured in the same run.
// Servers and workers are threads of this process; every byte crosses a real TCP socket.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "common/init.h"
#include "common/json_writer.h"
#include "common/kv_client.h"
#include "common/split_list.h"
#include "common/transport.h"
#include "server/param_server.h"

DEFINE_string(sizes_kb, "4,64,256,1024,2844,16384,65536", "payload sizes in KB (2844: DeepTTE)");
DEFINE_string(servers, "1,2", "server counts");
DEFINE_string(workers, "1,2,4", "worker counts");
DEFINE_double(seconds, 0.5, "measuring time per configuration (after one warm-up round)");
DEFINE_int32(min_rounds, 5, "at least this many rounds per configuration");

namespace tteps {
namespace {

using Clock = std::chrono::steady_clock;

NodeInfo Node(Role role, int id) {
  NodeInfo n;
  n.role = role;
  n.id = id;
  n.host = "localhost";
  return n;
}

struct Result {
  double round_ms = 0;  // mean time of one round (per worker)
  double mb_per_s = 0;  // bytes moved (both directions, all workers) per second
  int rounds = 0;
};

// Raw ZeroMQ: a DEALER sends `bytes`, a ROUTER thread echoes them back.
Result RawRoundTrip(zmq::context_t& ctx, size_t bytes) {
  auto router = MakeSocket(ctx, zmq::socket_type::router);
  const std::string endpoint = BindTcp(router, "127.0.0.1");
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    while (!stop) {
      zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(10)) == 0) continue;
      zmq::message_t id, body;
      (void)router.recv(id);
      (void)router.recv(body);
      router.send(id, zmq::send_flags::sndmore);
      router.send(body, zmq::send_flags::none);  // the same buffer goes back
    }
  });
  auto dealer = MakeSocket(ctx, zmq::socket_type::dealer);
  dealer.connect(endpoint);
  std::vector<char> payload(bytes, 1);
  Result r;
  Clock::time_point start;
  for (int i = -1;; ++i) {
    if (i == 0) start = Clock::now();
    dealer.send(zmq::buffer(payload), zmq::send_flags::none);
    zmq::message_t reply;
    (void)dealer.recv(reply);
    if (i >= 0) ++r.rounds;
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (i >= 0 && r.rounds >= FLAGS_min_rounds && t >= FLAGS_seconds) {
      r.round_ms = 1e3 * t / r.rounds;
      r.mb_per_s = 2.0 * bytes * r.rounds / t / 1e6;
      break;
    }
  }
  stop = true;
  echo.join();
  return r;
}

// A sync job's map of `floats` keys over S servers, each bound to one of `sockets` on loopback.
ClusterMap SyncMap(zmq::context_t& ctx, int64_t floats, int servers, int workers,
                   std::vector<zmq::socket_t>* sockets) {
  ClusterMap map;
  map.config.exchange.mode = Mode::kSync;
  map.param_count = floats;
  map.fingerprint = 42;
  map.ranges = PartitionKeys(floats, servers);
  map.workers.resize(workers);
  for (int w = 0; w < workers; ++w) map.workers[w] = Node(Role::kWorker, w);
  for (int s = 0; s < servers; ++s) {
    sockets->push_back(MakeSocket(ctx, zmq::socket_type::router));
    NodeInfo info = Node(Role::kServer, s);
    info.endpoint = BindTcp(sockets->back(), "127.0.0.1");
    map.servers.push_back(info);
  }
  return map;
}

// `workers` workers each doing `rounds` push(gradient) + pull(next version) round trips from
// version `version` on; returns each worker's seconds.
std::vector<double> RunRounds(zmq::context_t& ctx, const ClusterMap& map,
                              const KVClientOptions& options, int64_t floats, int workers,
                              int64_t version, int rounds) {
  std::vector<double> elapsed(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      KVClient kv(ctx, map, Node(Role::kWorker, w), options);
      auto grad = std::make_shared<std::vector<float>>(floats, 1e-3f);
      std::vector<float> params(floats);
      const auto start = Clock::now();
      for (int i = 0; i < rounds; ++i) {
        kv.Call(std::move(KVRequest::Push(grad, {}, {version + i, 1, -1})
                              .ThenPull(version + i + 1, params.data(), {{}})));
      }
      elapsed[w] = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  for (auto& t : threads) t.join();
  return elapsed;
}

// S parameter servers (sync, Adam) and W workers doing push(gradient) + pull(next version).
Result PushPull(zmq::context_t& ctx, int64_t floats, int servers, int workers) {
  std::vector<zmq::socket_t> sockets;
  const ClusterMap map = SyncMap(ctx, floats, servers, workers, &sockets);
  std::vector<std::unique_ptr<server::Shard>> shards;
  std::vector<std::unique_ptr<server::ParamServer>> ps;
  for (int s = 0; s < servers; ++s) {
    OptimizerConfig adam;
    shards.push_back(
        std::make_unique<server::Shard>(map.ranges[s], server::Consistency::kSync, workers, 0,
                                        server::MakeOptimizer(adam, map.ranges[s].size())));
    ps.push_back(std::make_unique<server::ParamServer>(sockets[s], map, s, shards[s].get(), 60));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> server_threads;
  for (int s = 0; s < servers; ++s) {
    server_threads.emplace_back([&, s] { ps[s]->Run([&] { return stop.load(); }); });
  }
  std::vector<float> init(floats, 0.5f);
  KVClientOptions options;
  options.timeout_s = 60;
  {
    KVClient kv(ctx, map, Node(Role::kWorker, 0), options);
    kv.Call(KVRequest::Init(init.data(), floats));
  }
  // Every worker runs the same number of rounds (sync needs all); the count is fixed by a
  // calibration round so that the run lasts about --seconds.
  const double calibration = RunRounds(ctx, map, options, floats, workers, 0, 1).front();
  const int rounds = std::max<int>(FLAGS_min_rounds, static_cast<int>(FLAGS_seconds / calibration));
  const std::vector<double> elapsed = RunRounds(ctx, map, options, floats, workers, 1, rounds);
  Result r;
  double t = 0;
  for (double e : elapsed) t = std::max(t, e);
  r.rounds = rounds;
  r.round_ms = 1e3 * t / rounds;
  r.mb_per_s = 2.0 * floats * sizeof(float) * workers * rounds / t / 1e6;
  stop = true;
  for (auto& th : server_threads) th.join();
  return r;
}

}  // namespace
}  // namespace tteps

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "bench/push_pull: push + pull latency and bandwidth through tteps servers "
                     "beside raw ZeroMQ, over TCP loopback.");
  using namespace tteps;
  zmq::context_t ctx;
  // A markdown table (docs/more-benchmarks.md quotes it).
  std::printf(
      "| size KB | what | S | W | round ms | MB/s | x raw |\n|---|---|---|---|---|---|---|\n");
  for (int64_t kb : SplitInts(FLAGS_sizes_kb)) {
    const size_t bytes = static_cast<size_t>(kb) * 1024;
    const Result raw = RawRoundTrip(ctx, bytes);
    std::printf("| %lld | %s | %s | %s | %.3f | %.0f | %s |\n", static_cast<long long>(kb),
                "zmq-raw", "-", "-", raw.round_ms, raw.mb_per_s, "1.00");
    std::fprintf(stderr, "%s\n",
                 JsonObject()
                     .Add("bench", "push_pull")
                     .Add("what", "zmq-raw")
                     .Add("size_kb", kb)
                     .Add("round_ms", raw.round_ms)
                     .Add("mb_per_s", raw.mb_per_s)
                     .str()
                     .c_str());
    for (int64_t s : SplitInts(FLAGS_servers)) {
      for (int64_t w : SplitInts(FLAGS_workers)) {
        const Result r =
            PushPull(ctx, bytes / sizeof(float), static_cast<int>(s), static_cast<int>(w));
        std::printf("| %lld | %s | %lld | %lld | %.3f | %.0f | %.2f |\n",
                    static_cast<long long>(kb), "push+pull", static_cast<long long>(s),
                    static_cast<long long>(w), r.round_ms, r.mb_per_s, r.round_ms / raw.round_ms);
        std::fprintf(stderr, "%s\n",
                     JsonObject()
                         .Add("bench", "push_pull")
                         .Add("what", "push+pull")
                         .Add("size_kb", kb)
                         .Add("servers", s)
                         .Add("workers", w)
                         .Add("round_ms", r.round_ms)
                         .Add("mb_per_s", r.mb_per_s)
                         .Add("ratio_to_raw", r.round_ms / raw.round_ms)
                         .str()
                         .c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
