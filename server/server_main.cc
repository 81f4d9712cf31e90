// tteps-server: holds one key range of the parameters and applies the optimizer to it.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <vector>
#include <zmq.hpp>

#include "common/adascale.h"
#include "common/bootstrap.h"
#include "common/cereal_body.h"
#include "common/control_channel.h"
#include "common/curve.h"
#include "common/init.h"
#include "common/lr_schedule.h"
#include "common/node_flags.h"
#include "common/topics/server_topics.h"
#include "common/transport.h"
#include "server/checkpoint.h"
#include "server/param_server.h"
#include "server/replica_links.h"
#include "server/server_commands.h"

namespace tteps::server {
namespace {

// A shard for `map`'s range of this server, restored from a rollback's checkpoints or a
// resumed job's (its own, or a replica's: a server lost before had stopped writing its own).
std::unique_ptr<Shard> MakeShard(const ClusterMap& map) {
  const JobConfig& config = map.config;
  const int id = map.your_id;
  const KeyRange range = map.ranges.at(id);
  auto shard = std::make_unique<Shard>(range, ConsistencyFor(config.exchange.mode), SliceCount(map),
                                       config.exchange.staleness,
                                       MakeOptimizer(config.optimizer, range.size()));
  shard->set_lr_schedule(
      [optimizer = config.optimizer](int64_t step) { return LearningRate(optimizer, step); });
  shard->set_adascale(MakeAdaScale(config.optimizer, config.train.batch_size));
  shard->set_clip_norm(config.optimizer.clip_norm);
  const OutputConfig& output = config.output;
  if (!map.resume_sources.empty()) {
    const std::vector<int> sources(map.resume_sources.begin(), map.resume_sources.end());
    LoadCheckpointRange(output.checkpoint_dir, sources, map.resume_version, shard.get());
    LOG(WARNING) << "server " << id << " rolled back to version " << shard->version() << " of "
                 << output.checkpoint_dir;
  } else if (map.resume_version >= 0) {
    std::vector<int> sources = ReplicasOf(map, id);
    std::stable_partition(sources.begin(), sources.end(), [id](int s) { return s == id; });
    const int from = LoadReplicaCheckpoint(output.resume, sources, map.resume_version, shard.get());
    LOG(INFO) << "server " << id << " resumed from " << output.resume << " at version "
              << shard->version() << (from == id ? "" : " (server " + std::to_string(from) + "'s)");
  }
  // --slices past the workers: those slices have no worker of their own; others push them.
  for (int s = static_cast<int>(map.workers.size()); s < SliceCount(map); ++s) shard->DropWorker(s);
  return shard;
}

// --checkpoint_every: every such version of the shard is saved; a failure fails the job.
void SaveCheckpoints(ParamServer& server, Shard& shard, const OutputConfig& output, int id,
                     ControlChannel& control) {
  if (output.checkpoint_every <= 0) return;
  server.OnNewVersion([&, id](int64_t version) {
    if (version % output.checkpoint_every != 0) return;
    try {
      SaveCheckpoint(output.checkpoint_dir, id, shard);
    } catch (const std::exception& e) {
      // Not the request's fault: the scheduler fails the job, naming this server.
      LOG(ERROR) << "checkpoint failed: " << e.what();
      control.SendError(std::string("checkpoint failed: ") + e.what());
    }
  });
}

// The end: the server's statistics to the scheduler; the exit code.
int Finish(ControlChannel& control, const ParamServer& server, int id, int64_t refused_before,
           const CurveSecurity* curve, Tracer* tracer) {
  std::string reason;
  bool failed = false;
  control.ShutdownRequested(&reason, &failed);
  if (tracer) tracer->Flush();
  ServerStats stats = server.Stats();
  stats.errors += refused_before;
  stats.unauthenticated = curve ? curve->refused() : 0;
  control.Report(topics::kStats, stats);
  control.Flush();
  if (failed) {
    LOG(WARNING) << "server " << id << " stops: " << reason;
    return 1;
  }
  LOG(INFO) << "server " << id << " done: " << stats.ToJson().str();
  return 0;
}

// The scheduler's commands to this server (common/topics/server_topics.h) into `commands`; before
// control.Start(). The handlers run on the channel's thread under its lock: they only queue.
void Listen(ControlChannel& control, ServerCommands& commands) {
  control.OnCommand(topics::kNormTotal, [&commands](const topics::NormTotal& n) {
    commands.PutNorm(n.version, n.norm);
  });
  control.OnView([&commands, &control](const View& view) {
    if (commands.Follow(view)) NoteLostPeer();
    control.NoteViewFollowed(view.number);
  });
}

// What the server learns from the scheduler while it serves: which workers compute (a pull
// held for one waits on) and, clipping in sync mode, each version's global norm, which the
// scheduler answers the partial norms with.
void LinkToScheduler(ParamServer& server, ControlChannel& control, ServerCommands& commands) {
  server.set_busy_seen([&control](int worker) { return control.ComputingSeen(worker); });
  server.SetNormExchange(
      [&control](int64_t version, double squared) {
        control.Report(topics::kNormPartial, {version, squared});
      },
      [&commands](int64_t version) { return commands.TakeNorm(version); });
}

int Serve(Bootstrap& boot, const NodeOptions& node) {
  zmq::context_t ctx;
  const auto curve = SecureContext(ctx, node.curve_dir);
  auto socket = MakeSocket(ctx, zmq::socket_type::router);
  NodeInfo self = SelfInfo(Role::kServer, boot);
  self.endpoint = BindTcp(socket, boot.bind_host, boot.advertise_host);
  ShareSchedulerEndpoint(&boot, "");

  // Declared before the channel, whose thread writes into it.
  ServerCommands commands;
  ControlChannel control(ctx, boot.scheduler_endpoint, self, node.timeout_s, node.heartbeat_s);
  ClusterMap map = control.Register();
  const JobConfig& config = map.config;
  control.SetTiming(config.cluster.timeout_s, config.cluster.heartbeat_s, config.cluster.silence_s);
  // No frame larger than the model's values or a header may arrive (a rollback may give this
  // server any range; a sparse push's header lists its spans).
  socket.set(zmq::sockopt::maxmsgsize,
             std::max<int64_t>(map.param_count * sizeof(float), kMaxHeaderBytes) + 65536);
  Listen(control, commands);
  control.Start();
  auto tracer = MakeNodeTracer(&control, !config.output.trace.empty());
  ParamServer::Carried carried;  // across rollbacks: the workers lost, the joiners' places
  int64_t refused_before = 0;    // errors of the epochs before a rollback
  std::vector<Message> held;     // requests of the epoch a rollback starts, sent before it did

  // One epoch of the cluster map per pass: a rollback restores the checkpoint onto the new
  // ranges and serves on, through the same socket.
  for (;;) {
    const int id = map.your_id;
    LOG(INFO) << "server " << id << " at " << self.endpoint << " holds "
              << map.ranges.at(id).ToString() << ", mode " << ModeName(config.exchange.mode)
              << (map.epoch > 0 ? ", epoch " + std::to_string(map.epoch) : "");
    std::unique_ptr<Shard> shard = MakeShard(map);
    ParamServer server(socket, map, id, shard.get(), config.cluster.timeout_s);
    ReplicaLinks links(ctx, map, id);
    server.SetOrderLink([&links](int to, const Header& order) { return links.Send(to, order); });
    server.Carry(carried);
    for (Message& m : held) server.Handle(m);  // sent by nodes that rolled back before this one
    held.clear();
    server.set_tracer(tracer.get());
    LinkToScheduler(server, control, commands);
    SaveCheckpoints(server, *shard, config.output, id, control);
    std::optional<ServerRemap> rollback =
        server.Run([&] { return control.ShutdownRequested(); }, &commands);
    if (rollback && !control.ShutdownRequested()) {
      map = Remapped(std::move(map), *rollback);
      map.your_id = ServerIdIn(map, self.endpoint);  // renumbered
      commands.ClearNorms();                         // of versions that will be computed again
      carried = server.carried();
      refused_before += server.errors();
      held = server.TakeHeld();
      continue;
    }
    return Finish(control, server, id, refused_before, curve.get(), tracer.get());
  }
}

}  // namespace
}  // namespace tteps::server

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-server: a parameter server holding one key range of the model.\n"
                     "Started by launch/tteps (mpirun); its configuration comes from the "
                     "scheduler.");
  tteps::StartLogFile("server");
  const tteps::NodeOptions node = tteps::NodeOptionsFromFlags();
  return tteps::RunNode(tteps::Role::kServer, node,
                        [&](tteps::Bootstrap& boot) { return tteps::server::Serve(boot, node); });
}
