// tteps-worker: trains DeepTTE. --mode=local trains in this one process (the reference run);
// under mpirun (launch/tteps) or with --scheduler it is a worker of a distributed job, whose
// configuration comes from the scheduler.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "common/bootstrap.h"
#include "common/init.h"
#include "common/job_flags.h"
#include "common/node_flags.h"
#include "worker/local_run.h"
#include "worker/worker_process.h"

DEFINE_string(mode, "local",
              "local: train in this one process. Under mpirun (launch/tteps) the mode comes "
              "from the scheduler");
DEFINE_string(out_dir, "out", "output directory: metrics.jsonl, summary.json, model.pt");

namespace tteps {
namespace {

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
  return tteps::RunNode(tteps::Role::kWorker, node, [&](tteps::Bootstrap& boot) {
    return tteps::WorkerProcess::Start(boot, node);
  });
}
