// tteps-server: holds one key range of the parameters and applies the optimizer to it.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
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
#include "common/transport.h"
#include "server/checkpoint.h"
#include "server/param_server.h"
#include "server/replica_links.h"
#include "server/topics.h"

namespace tteps::server {
namespace {

int Serve(Bootstrap& boot, const NodeOptions& node) {
  zmq::context_t ctx;
  const auto curve = SecureContext(ctx, node.curve_dir);
  auto socket = MakeSocket(ctx, zmq::socket_type::router);
  NodeInfo self = SelfInfo(Role::kServer, boot);
  self.endpoint = BindTcp(socket, boot.bind_host, boot.advertise_host);
  ShareSchedulerEndpoint(&boot, "");

  // Clipping in sync mode: the scheduler answers each version's partial norms with the total.
  // Declared before the channel, whose thread writes into them.
  std::mutex commands_mu;
  std::map<int64_t, double> norms;  // version -> global norm
  std::vector<int> lost;            // workers declared lost, not yet dropped from the shard
  std::vector<int> lost_servers;    // servers declared lost, not yet told to the ParamServer
  std::vector<Header> joined;       // joiners in lost workers' places, not yet told to it
  ControlChannel control(ctx, boot.scheduler_endpoint, self, node.timeout_s, node.heartbeat_s);
  ClusterMap map = control.Register();
  const JobConfig& config = map.config;
  const double timeout_s = config.cluster.timeout_s;
  control.SetTiming(timeout_s, config.cluster.heartbeat_s, config.cluster.silence_s);
  // No frame larger than the model's values or a header may arrive (a rollback may give this
  // server any range; a sparse push's header lists its spans).
  socket.set(zmq::sockopt::maxmsgsize,
             std::max(static_cast<int64_t>(map.param_count * sizeof(float)),
                      static_cast<int64_t>(kMaxHeaderBytes)) +
                 65536);
  control.OnCommand(topics::kNormTotal, [&](const Header& h) {
    std::lock_guard<std::mutex> lock(commands_mu);
    norms[h.step] = h.norm;
  });
  control.OnCommand(topics::kServerLost, [&](const Header& h) {
    LOG(WARNING) << "server " << h.step << " was declared lost; its replicas serve its range";
    std::lock_guard<std::mutex> lock(commands_mu);
    lost_servers.push_back(static_cast<int>(h.step));
    NoteLostPeer();
  });
  control.OnCommand(topics::kWorkerJoined, [&](const Header& h) {
    std::lock_guard<std::mutex> lock(commands_mu);
    joined.push_back(h);
  });
  control.OnCommand(topics::kWorkerLost, [&](const Header& h) {
    std::lock_guard<std::mutex> lock(commands_mu);
    lost.push_back(static_cast<int>(h.step));
    NoteLostPeer();
  });
  std::optional<ClusterMap> rollback;  // the map of a rollback not started yet
  control.OnCommand(topics::kRollback, [&](const Header& h) {
    ClusterMap next;
    DecodeBody(h.text, &next);
    std::lock_guard<std::mutex> lock(commands_mu);
    rollback = std::move(next);
    NoteLostPeer();
  });
  control.Start();
  const OutputConfig& output = config.output;
  auto tracer = MakeNodeTracer(&control, !output.trace.empty());
  std::vector<int> dropped;    // every worker declared lost (dropped again after a rollback)
  std::map<int, int> joiners;  // async / SSP: slot -> the worker that joined for it
  int64_t refused_before = 0;  // errors of the epochs before a rollback
  std::vector<Message> held;   // requests of the epoch a rollback starts, sent before it did

  // One epoch of the cluster map per pass: a rollback restores the checkpoint onto the new
  // ranges and serves on, through the same socket.
  for (;;) {
    const int id = map.your_id;
    const KeyRange range = map.ranges.at(id);
    LOG(INFO) << "server " << id << " at " << self.endpoint << " holds " << range.ToString() << " ("
              << range.size() << " floats), mode " << ModeName(config.exchange.mode)
              << (map.epoch > 0 ? ", epoch " + std::to_string(map.epoch) : "");
    Shard shard(range, ConsistencyFor(config.exchange.mode), static_cast<int>(map.workers.size()),
                config.exchange.staleness, MakeOptimizer(config.optimizer, range.size()));
    shard.set_lr_schedule(
        [optimizer = config.optimizer](int64_t step) { return LearningRate(optimizer, step); });
    shard.set_adascale(MakeAdaScale(config.optimizer, config.train.batch_size));
    if (!map.resume_sources.empty()) {
      const std::vector<int> sources(map.resume_sources.begin(), map.resume_sources.end());
      LoadCheckpointRange(output.checkpoint_dir, sources, map.resume_version, &shard);
      LOG(WARNING) << "server " << id << " rolled back to version " << shard.version() << " of "
                   << output.checkpoint_dir;
    } else if (map.resume_version >= 0) {
      // Its own checkpoint, or a replica's (a server lost before had stopped writing its own).
      std::vector<int> sources = ReplicasOf(map, id);
      std::stable_partition(sources.begin(), sources.end(), [id](int s) { return s == id; });
      const int from = LoadReplicaCheckpoint(output.resume, sources, map.resume_version, &shard);
      LOG(INFO) << "server " << id << " resumed from " << output.resume << " at version "
                << shard.version()
                << (from == id ? "" : " (server " + std::to_string(from) + "'s)");
    }
    for (int w : dropped) {
      if (w < static_cast<int>(map.workers.size())) shard.DropWorker(w);
    }
    ParamServer server(socket, map, id, &shard, timeout_s);
    ReplicaLinks links(ctx, map, id);
    server.SetOrderLink([&links](int to, const Header& order) { return links.Send(to, order); });
    // After a rollback the joiners push again from the checkpoint's clocks of their places.
    for (const auto& [slot, joiner] : joiners) server.Rejoin(slot, joiner, shard.clock(slot));
    for (Message& m : held) server.Handle(m);  // sent by nodes that rolled back before this one
    held.clear();
    server.set_tracer(tracer.get());
    shard.set_clip_norm(config.optimizer.clip_norm);
    server.SetNormExchange(
        [&](int64_t version, double squared) {
          control.Report(topics::kNormPartial, version, "", {}, 0, squared);
        },
        [&](int64_t version) -> std::optional<double> {
          std::lock_guard<std::mutex> lock(commands_mu);
          auto it = norms.find(version);
          if (it == norms.end()) return std::nullopt;
          const double norm = it->second;
          norms.erase(it);
          return norm;
        });
    if (output.checkpoint_every > 0) {
      server.OnNewVersion([&](int64_t version) {
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
    // commands_mu is never held while the channel's lock is taken (ShutdownRequested): the
    // channel calls the command handlers, which take commands_mu, under its lock.
    server.Run([&] {
      if (control.ShutdownRequested()) return true;
      std::lock_guard<std::mutex> lock(commands_mu);
      for (int s : lost_servers) server.LoseServer(s);
      lost_servers.clear();
      for (const Header& h : joined) {
        server.Rejoin(static_cast<int>(h.step), static_cast<int>(h.samples),
                      static_cast<int64_t>(h.norm));
        joiners[static_cast<int>(h.step)] = static_cast<int>(h.samples);
      }
      joined.clear();
      for (int w : lost) {
        try {
          server.DropWorker(w);
          dropped.push_back(w);
          for (auto it = joiners.begin(); it != joiners.end();) {
            it = it->second == w ? joiners.erase(it) : std::next(it);
          }
          LOG(WARNING) << "server " << id << ": worker " << w << " was declared lost; "
                       << (config.exchange.mode == Mode::kSync
                               ? "its slice comes from another worker"
                           : server.following() ? "dropped where the primary's order says"
                                                : "its clock no longer holds pulls back");
        } catch (const std::invalid_argument& e) {
          LOG(ERROR) << "server " << id << ": " << e.what();
        }
      }
      lost.clear();
      return rollback.has_value();
    });

    if (!control.ShutdownRequested()) {
      std::lock_guard<std::mutex> lock(commands_mu);
      if (rollback) {
        map = std::move(*rollback);
        rollback.reset();
        norms.clear();         // of versions that will be computed again
        lost_servers.clear();  // ids of the old map
        refused_before += server.errors();
        held = server.TakeHeld();
        continue;
      }
    }
    std::string reason;
    bool failed = false;
    control.ShutdownRequested(&reason, &failed);
    if (tracer) tracer->Flush();
    ServerStats stats = server.Stats();
    stats.errors += refused_before;
    stats.unauthenticated = curve ? curve->refused() : 0;
    control.Report(topics::kStats, shard.version(), EncodeCereal(stats));
    control.Flush();
    if (failed) {
      LOG(WARNING) << "server " << id << " stops: " << reason;
      return 1;
    }
    LOG(INFO) << "server " << id << " done: " << stats.ToJson().str();
    return 0;
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
