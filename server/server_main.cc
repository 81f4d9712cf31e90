// tteps-server: holds one key range of the parameters and applies the optimizer to it.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <zmq.hpp>

#include "common/bootstrap.h"
#include "common/control_channel.h"
#include "common/init.h"
#include "common/transport.h"
#include "server/checkpoint.h"
#include "server/param_server.h"
#include "server/server_flags.h"

namespace tteps::server {
namespace {

int Serve(Bootstrap& boot) {
  zmq::context_t ctx;
  auto socket = MakeSocket(ctx, zmq::socket_type::router);
  NodeInfo self = SelfInfo(Role::kServer, boot);
  self.endpoint = BindEphemeral(socket, boot.advertise_host);
  ShareSchedulerEndpoint(&boot, "");

  ControlChannel control(ctx, boot.scheduler_endpoint, self, TimeoutSeconds(), HeartbeatSeconds());
  const ClusterMap map = control.Register();
  ApplyJobFlags(map.flags);
  const int id = map.your_id;
  const KeyRange range = map.ranges.at(id);
  LOG(INFO) << "server " << id << " at " << self.endpoint << " holds " << range.ToString() << " ("
            << range.size() << " floats), mode " << ModeName(map.mode);
  control.Start();

  Shard shard(range, ConsistencyFor(map.mode), static_cast<int>(map.workers.size()),
              FLAGS_staleness, MakeOptimizer(OptimizerConfigFromFlags(), range.size()));
  if (map.resume_version >= 0) {
    LoadCheckpoint(FLAGS_resume, id, map.resume_version, &shard);
    LOG(INFO) << "server " << id << " resumed from " << FLAGS_resume << " at version "
              << shard.version();
  }
  ParamServer server(socket, map, id, &shard, TimeoutSeconds());
  auto tracer = MakeNodeTracer(&control);
  server.set_tracer(tracer.get());
  shard.set_clip_norm(FLAGS_clip_norm);
  server.SetNormExchange(
      [&](int64_t version, double squared) {
        control.Send(MsgType::kNormPartial, version, "", 0, squared);
      },
      [&](int64_t version) { return control.TakeNorm(version); });
  if (FLAGS_checkpoint_every > 0) {
    server.OnNewVersion([&](int64_t version) {
      if (version % FLAGS_checkpoint_every != 0) return;
      try {
        SaveCheckpoint(FLAGS_checkpoint_dir, id, shard);
      } catch (const std::exception& e) {
        // Not the request's fault: the scheduler fails the job, naming this server.
        LOG(ERROR) << "checkpoint failed: " << e.what();
        control.Send(MsgType::kError, version, std::string("checkpoint failed: ") + e.what());
      }
    });
  }
  server.Run([&] { return control.ShutdownRequested(); });

  std::string reason;
  bool failed = false;
  control.ShutdownRequested(&reason, &failed);
  if (tracer) tracer->Flush();
  control.Send(MsgType::kMetrics, shard.version(), server.StatsJson());
  control.Flush();
  if (failed) {
    LOG(ERROR) << "server " << id << " stops: " << reason;
    return 1;
  }
  LOG(INFO) << "server " << id << " done: " << server.StatsJson();
  return 0;
}

}  // namespace
}  // namespace tteps::server

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-server: a parameter server holding one key range of the model.\n"
                     "Started by launch/tteps (mpirun); its configuration comes from the "
                     "scheduler.");
  return tteps::RunNode(tteps::Role::kServer, tteps::server::Serve);
}
