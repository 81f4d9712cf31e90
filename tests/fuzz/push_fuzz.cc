// Pushes, pulls and inits as a parameter server receives them: a frame set that ReceiveMessage
// would accept is handed to ParamServer::Handle (a sync shard of 2 workers, 64 keys, clipping
// on or off; or an async backup of a range held twice, which holds pushes for its primary's
// kOrder entries); the server must refuse or apply it and never crash, and its values stay
// finite.
#include <cmath>
#include <optional>
#include <zmq.hpp>

#include "common/codec.h"
#include "server/param_server.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

constexpr int64_t kKeys = 64;
constexpr uint64_t kFingerprint = 0xF00D;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tteps::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tteps;
  // Never destroyed: a context that outlives its sockets would wait for them at exit.
  static zmq::context_t* ctx = new zmq::context_t();
  static zmq::socket_t* socket = [] {
    auto* s = new zmq::socket_t(MakeSocket(*ctx, zmq::socket_type::router));
    s->bind("inproc://push_fuzz");
    return s;
  }();
  const fuzz::FuzzMessage fm = fuzz::CutMessage(data, size);
  Message m;
  try {
    m.header = DecodeHeader(fm.header.data(), fm.header.size());
    std::vector<size_t> sizes;
    for (const auto& p : fm.payloads) sizes.push_back(p.size());
    ValidatePayloads(m.header, sizes);
  } catch (const CodecError&) {
    return 0;  // ReceiveMessage refuses it before the server sees it
  }
  for (const auto& p : fm.payloads) m.payloads.emplace_back(p.data(), p.size());

  ClusterMap map;
  map.config.exchange.mode = (size > 0 && data[size - 1] & 1) ? Mode::kAsync : Mode::kSync;
  map.param_count = kKeys;
  map.fingerprint = kFingerprint;
  // Options from the input's last bytes: async, clipping, initialised, a backup of 2 replicas.
  const bool backup = size > 3 && data[size - 4] & 1;
  map.ranges = {{0, kKeys}};
  if (backup) map.ranges.push_back({0, kKeys});
  map.workers.resize(2);
  OptimizerConfig opt;
  opt.name = "adam";
  server::Shard shard({0, kKeys}, server::ConsistencyFor(map.config.exchange.mode), 2, 0,
                      server::MakeOptimizer(opt, kKeys));
  if (size > 1 && data[size - 2] & 1) shard.set_clip_norm(1.0);
  const std::vector<float> init(kKeys, 0.5f);
  if (size > 2 && data[size - 3] & 1) shard.Init(init.data());
  server::ParamServer server(*socket, map, backup ? 1 : 0, &shard, 0.0);
  server.SetNormExchange([](int64_t, double) {},
                         [](int64_t) -> std::optional<double> { return 1.0; });
  server.SetOrderLink([](int, const Header&) { return true; });
  // A backup fed the message as a push and as its primary's entry naming worker 0's first.
  if (backup) {
    Message order;
    order.header.type = MsgType::kOrder;
    order.header.sender_role = Role::kServer;
    order.header.sender_id = 0;
    order.header.fingerprint = kFingerprint;
    order.header.samples = 1;
    server.Handle(order);
  }
  server.Handle(m);
  server.ServePending();
  for (float v : *shard.values()) {
    if (!std::isfinite(v)) __builtin_trap();  // a push poisoned the model
  }
  return 0;
}
