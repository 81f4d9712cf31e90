// tteps-worker: trains DeepTTE. --mode=local trains in this one process (the reference run);
// under mpirun (launch/tteps) or with --scheduler it is a worker of a distributed job, whose
// configuration comes from the scheduler.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>
#include <zmq.hpp>

#include "common/bootstrap.h"
#include "common/control_channel.h"
#include "common/curve.h"
#include "common/init.h"
#include "common/job_flags.h"
#include "common/lost_servers.h"
#include "common/node_flags.h"
#include "model/data/trip_store.h"
#include "worker/collectives/tcp_ring.h"
#include "worker/local_run.h"
#include "worker/scheduler_commands.h"
#include "worker/worker_process.h"

DEFINE_string(mode, "local",
              "local: train in this one process. Under mpirun (launch/tteps) the mode comes "
              "from the scheduler");
DEFINE_string(out_dir, "out", "output directory: metrics.jsonl, summary.json, model.pt");

namespace tteps {
namespace {

// Under mpirun (or with --scheduler): a worker of a parameter-server or ring job.
int RunDistributed(Bootstrap& boot, const NodeOptions& node) {
  ShareSchedulerEndpoint(&boot, "");
  zmq::context_t ctx;
  const auto curve = SecureContext(ctx, node.curve_dir);
  // The socket a ring neighbour sends to (ring mode over TCP): bound before registering, so
  // that the cluster map carries every worker's endpoint.
  collectives::TcpRing ring(ctx, boot.bind_host, boot.advertise_host);
  NodeInfo self = SelfInfo(Role::kWorker, boot);
  self.endpoint = ring.endpoint();
  // The data this node's flags name (empty: the job's, checked once loaded): the scheduler
  // refuses another copy of its store.
  self.data_path = OwnTrainData();
  if (data::IsTripStore(self.data_path)) {
    self.data_checksum = data::ReadStoreManifest(self.data_path).checksum;
  }
  SchedulerCommands commands;  // outlives the channel, whose thread writes into it
  ControlChannel control(ctx, boot.scheduler_endpoint, self, node.timeout_s, node.heartbeat_s);
  const ClusterMap map = control.Register();
  control.SetTiming(map.config.cluster.timeout_s, map.config.cluster.heartbeat_s,
                    map.config.cluster.silence_s);
  commands.Listen(&control, map.your_id, map.own_slice >= 0 ? map.own_slice : map.your_id);
  control.Start();
  try {
    WorkerProcess(boot, map, map.config, commands, &control, &ctx, &ring).Run();
    return 0;
  } catch (const std::exception& e) {
    std::string reason;
    bool failed = false;
    if (control.ShutdownRequested(&reason, &failed) && failed) {
      LOG(WARNING) << "worker " << map.your_id << " stops: " << reason;
    } else {
      LOG(ERROR) << e.what();
      control.SendError(e.what());
      control.Flush();
    }
    return 1;
  }
}

// Started as one rank of a job: by mpirun, or by srun over Slurm's PMIx (launch/tteps
// --launcher srun). A worker started alone trains locally.
bool UnderMpi() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size != nullptr && std::atoi(size) > 1) return true;
  const char* step_tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  return std::getenv("PMIX_RANK") != nullptr && step_tasks != nullptr && std::atoi(step_tasks) > 1;
}

}  // namespace
}  // namespace tteps

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-worker: trains the DeepTTE travel-time model.\n"
                     "  tteps-worker --mode=local [--train_data FILE] [--out_dir DIR] ...");
  tteps::StartLogFile("worker");
  const tteps::NodeOptions node = tteps::NodeOptionsFromFlags();
  if (node.scheduler.empty() && !tteps::UnderMpi()) {
    try {
      tteps::JobConfig config = tteps::JobConfigFromFlags();
      config.exchange.mode = tteps::ParseMode(FLAGS_mode);
      if (!tteps::RunsAlone(config.exchange.mode)) {
        LOG(ERROR) << "--mode=" << FLAGS_mode
                   << " needs a scheduler: start the job with launch/tteps (mpirun)";
        return 2;
      }
      config.output.out_dir = FLAGS_out_dir;
      config.Validate();
      torch::set_num_threads(config.train.threads);
      return tteps::RunLocal(config);
    } catch (const std::exception& e) {
      LOG(ERROR) << e.what();
      return 1;
    }
  }
  return tteps::RunNode(tteps::Role::kWorker, node,
                        [&](tteps::Bootstrap& boot) { return tteps::RunDistributed(boot, node); });
}
