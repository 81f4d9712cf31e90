// make_seeds DIR: writes the fuzzers' seed corpus, valid inputs of each kind, into
// DIR/<target>/ (the committed tests/fuzz/corpus was made by it).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/busy_peers.h"
#include "common/cereal_body.h"
#include "common/cluster_map.h"
#include "common/codec.h"
#include "common/topics/server_stats.h"
#include "common/topics/train_report.h"
#include "common/view.h"
#include "server/checkpoint.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace tteps;
namespace fs = std::filesystem;

void Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

std::string Floats(size_t n, float v) {
  std::string s(n * sizeof(float), '\0');
  for (size_t i = 0; i < n; ++i) std::memcpy(&s[i * sizeof(float)], &v, sizeof v);
  return s;
}

// A data message for the push fuzzer's server (64 keys, fingerprint 0xF00D) + option bytes;
// `ranges`: the keys it names (sparse rows), all 64 by default.
std::string DataMessage(MsgType type, int sender, int64_t step, bool payload, uint8_t options,
                        std::vector<KeyRange> ranges = {{0, 64}}, WireType wire = WireType::kF32,
                        bool more = false) {
  Header h;
  h.type = type;
  h.sender_role = Role::kWorker;
  h.sender_id = sender;
  h.request_id = 7;
  h.step = step;
  h.samples = 4;
  h.fingerprint = 0xF00D;
  h.ranges = ranges;
  h.wire = wire;
  h.more = more;
  fuzz::FuzzMessage m;
  if (payload) {
    const auto n = static_cast<size_t>(SpanKeys(ranges));
    if (wire == WireType::kBf16) {
      std::string v;
      for (size_t i = 0; i < n; ++i) v += std::string("\x80\x3e", 2);  // 0.25, little-endian
      m.payloads.push_back(v);
    } else {
      m.payloads.push_back(Floats(n, 0.25f));
    }
    h.payload_bytes = {m.payloads.back().size()};
  }
  m.header = EncodeHeader(h);
  return fuzz::JoinMessage(m) + std::string(3, static_cast<char>(options));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  int n = 0;
  for (uint8_t options : {0, 7}) {
    for (const std::string target : {"header_fuzz", "push_fuzz"}) {
      const std::string dir = out + "/" + target;
      Write(dir, "init-" + std::to_string(options),
            DataMessage(MsgType::kInit, 0, 0, true, options));
      Write(dir, "push0-" + std::to_string(options),
            DataMessage(MsgType::kPush, 0, 0, true, options));
      Write(dir, "push1-" + std::to_string(options),
            DataMessage(MsgType::kPush, 1, 0, true, options));
      Write(dir, "pull-" + std::to_string(options),
            DataMessage(MsgType::kPull, 1, 1, false, options));
      const std::vector<KeyRange> rows = {{0, 8}, {20, 24}, {60, 64}};
      Write(dir, "sparse-push-" + std::to_string(options),
            DataMessage(MsgType::kPush, 0, 0, true, options, rows));
      Write(dir, "sparse-pull-" + std::to_string(options),
            DataMessage(MsgType::kPull, 0, 1, false, options, rows));
      Write(dir, "empty-push-" + std::to_string(options),
            DataMessage(MsgType::kPush, 1, 0, true, options, {}));
      Write(dir, "bf16-push-" + std::to_string(options),
            DataMessage(MsgType::kPush, 0, 0, true, options, rows, WireType::kBf16));
      Write(dir, "part-push-" + std::to_string(options),
            DataMessage(MsgType::kPush, 1, 0, true, options, {{40, 64}}, WireType::kF32, true));
      n += 9;
    }
  }
  {
    Header h;
    h.type = MsgType::kCommand;
    h.sender_role = Role::kScheduler;
    h.topic = "set-accumulation";
    h.samples = 4;
    h.text = "a body";
    fuzz::FuzzMessage m;
    m.header = EncodeHeader(h);
    Write(out + "/header_fuzz", "command", fuzz::JoinMessage(m));
    ++n;
  }
  {
    Header h;  // a primary's entry: worker 1's push that made its count 3
    h.type = MsgType::kOrder;
    h.sender_role = Role::kServer;
    h.sender_id = 0;
    h.request_id = 0;
    h.step = 1;
    h.samples = 3;
    h.fingerprint = 0xF00D;
    fuzz::FuzzMessage m;
    m.header = EncodeHeader(h);
    for (const std::string target : {"header_fuzz", "push_fuzz"}) {
      // Options: async, a backup of 2 replicas.
      Write(out + "/" + target, "order", fuzz::JoinMessage(m) + std::string("\x01\x00\x00\x01", 4));
      ++n;
    }
  }
  const std::string control = out + "/control_fuzz";
  ClusterMap map;
  map.param_count = 1000;
  map.fingerprint = 42;
  map.ranges = PartitionKeys(1000, 2);
  map.servers.resize(2);
  map.workers.resize(3);
  map.start_steps = {1, 2, 3};
  Write(control, "cluster_map", std::string(1, '\0') + EncodeCereal(map));
  NodeInfo node;
  node.role = Role::kWorker;
  node.id = 1;
  node.host = "host";
  node.endpoint = "tcp://127.0.0.1:5555";
  Write(control, "node_info", std::string(1, '\1') + EncodeCereal(node));
  TrainReport report;
  report.step_losses = {0.5, 0.25};
  report.exchange = {{"push_s", 0.1}, {"staleness", 2}};
  Write(control, "train_report", std::string(1, '\2') + EncodeCereal(report));
  server::ServerStats stats;
  stats.staleness = {{0, 10}, {1, 3}};
  Write(control, "server_stats", std::string(1, '\3') + EncodeCereal(stats));
  View view;
  view.number = 3;
  view.from_step = 7;
  view.reason = "handover";
  view.live = {0, 2};
  view.lost_workers = {1};
  view.slice_owner = {0, 0, 2};
  view.handover = {{1, 3}};
  Write(control, "view", std::string(1, '\4') + EncodeCereal(view));
  Write(control, "heartbeat", std::string(1, '\5') + EncodeCereal(HeartbeatBody{12}));
  Write(control, "heartbeat_ack", std::string(1, '\6') + EncodeCereal(HeartbeatAck{true, {0x05}}));
  n += 7;

  for (const std::string name : {"momentum", "adam"}) {
    OptimizerConfig opt;
    opt.name = name;
    server::Shard shard({8, 24}, server::Consistency::kSync, 2, 0, server::MakeOptimizer(opt, 16));
    const std::vector<float> init(16, 1.0f), grad(16, 0.5f);
    shard.Init(init.data());
    shard.Push(0, 0, 2, grad.data());
    shard.Push(1, 0, 2, grad.data());
    const std::string tmp = out + "/tmp-" + name;
    server::SaveCheckpoint(tmp, 0, shard);
    std::ifstream in(tmp + "/server-0-v1.ckpt", std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    Write(out + "/checkpoint_fuzz", name, bytes.str());
    fs::remove_all(tmp);
    ++n;
  }

  std::ifstream trips(TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl");
  std::string line;
  for (int i = 0; i < 3 && std::getline(trips, line); ++i) {
    Write(out + "/trip_fuzz", "trip" + std::to_string(i), line);
    Write(out + "/trip_fuzz", "cut" + std::to_string(i), line.substr(0, line.size() / 2));
    n += 2;
  }
  std::printf("wrote %d seeds under %s\n", n, out.c_str());
  return 0;
}
