// tteps-scheduler: coordinates a job (rank 0 of the mpirun), with or without servers. It holds the
// job's configuration (all training flags are given to it and sent to every node), registers
// servers and workers, watches heartbeats, gathers metrics, evaluates and writes the outputs.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <fstream>
#include <zmq.hpp>

#include "common/bootstrap.h"
#include "common/init.h"
#include "common/run_output.h"
#include "common/transport.h"
#include "scheduler/coordinator.h"
#include "scheduler/model_evaluation.h"
#include "scheduler/policy_flags.h"
#include "server/checkpoint.h"
#include "server/server_flags.h"
#include "worker/dataset.h"
#include "worker/model_params.h"
#include "worker/worker_flags.h"

DEFINE_string(mode, "sync",
              "sync (BSP), async (ASP) or ssp (--staleness) through parameter servers; ring "
              "(gradient allreduce) or average (parameter averaging) between workers only");
DEFINE_string(out_dir, "out", "output directory: metrics.jsonl, summary.json, model.pt");
DEFINE_int32(num_servers, 0, "started without MPI: how many servers will register");
DEFINE_int32(num_workers, 0, "started without MPI: how many workers will register");
DEFINE_double(silence_s, 0, "a node silent this long fails the job (0: 5 x --heartbeat_s)");
DEFINE_bool(check, false,
            "only check the configuration (flags, data and stats files) and exit: launch/tteps "
            "runs this before mpirun, so a mistake fails at once instead of at the deadline");

namespace tteps::scheduler {
namespace {

// The mode and the options that depend on it.
Mode CheckMode() {
  const Mode mode = ParseMode(FLAGS_mode);
  if (mode == Mode::kLocal) {
    throw std::invalid_argument("--mode local runs in one process: tteps-worker --mode local");
  }
  if (UsesServers(mode)) return mode;
  RingOptionsFromFlags();
  if (!FLAGS_resume.empty() || FLAGS_checkpoint_every > 0) {
    throw std::invalid_argument(
        "--resume and --checkpoint_every: checkpoints are kept by the "
        "parameter servers, and --mode " +
        FLAGS_mode + " has none");
  }
  return mode;
}

// Validates every option and opens the input files, without starting anything.
int CheckConfig() {
  CheckMode();
  CheckPolicyFlags();
  server::OptimizerConfigFromFlags();
  TrainOptionsFromFlags();
  ModelConfigFromFlags();
  auto data = DatasetOptionsFromFlags();
  std::vector<std::string> files = data.train_files;
  if (!data.eval_file.empty()) files.push_back(data.eval_file);
  files.push_back(FLAGS_stats);
  for (const auto& f : files) {
    if (!std::ifstream(f)) throw std::invalid_argument("cannot open " + f);
  }
  if (!FLAGS_resume.empty() && !std::ifstream(FLAGS_resume)) {
    throw std::invalid_argument("cannot open the checkpoint directory " + FLAGS_resume);
  }
  if (!TracePath().empty() && !std::ofstream(TracePath())) {
    throw std::invalid_argument("cannot write the trace file " + TracePath() + " (--trace)");
  }
  return 0;
}

int Schedule(Bootstrap& boot) {
  const Mode mode = CheckMode();
  server::OptimizerConfigFromFlags();
  auto train_opts = TrainOptionsFromFlags();
  auto dataset = LoadDataset(DatasetOptionsFromFlags());
  LOG(INFO) << "data: " << dataset.description;
  torch::manual_seed(train_opts.seed);
  deeptte::DeepTTE model(ModelConfigFromFlags(), data::LoadNormStats(FLAGS_stats));
  const ParamLayout layout = LayoutOf(*model);
  LOG(INFO) << "parameters: " << layout.Describe();

  // Before the job starts, so that an unreadable --ppo_policy_in stops it at once.
  auto policy = MakePolicyFromFlags();

  zmq::context_t ctx;
  auto socket = MakeSocket(ctx, zmq::socket_type::router);
  std::string endpoint;
  if (boot.mpi) {
    endpoint = BindEphemeral(socket, boot.advertise_host);
  } else {
    socket.bind("tcp://*:" +
                boot.scheduler_endpoint.substr(boot.scheduler_endpoint.rfind(':') + 1));
    endpoint = boot.scheduler_endpoint;
  }
  ShareSchedulerEndpoint(&boot, endpoint);
  LOG(INFO) << "scheduler at " << endpoint;

  CoordinatorOptions o;
  o.mode = mode;
  o.num_servers = boot.mpi ? boot.num_servers : FLAGS_num_servers;
  o.num_workers = boot.mpi ? boot.num_workers : FLAGS_num_workers;
  if (!UsesServers(mode) && (o.num_servers != 0 || o.num_workers < 1 || !boot.mpi)) {
    throw std::invalid_argument("--mode " + FLAGS_mode +
                                " runs one or more workers and no servers, under mpirun (found " +
                                std::to_string(o.num_servers) + " servers and " +
                                std::to_string(o.num_workers) + " workers)");
  }
  if (UsesServers(mode) && (o.num_servers < 1 || o.num_workers < 1)) {
    throw std::invalid_argument("the job needs at least one server and one worker (found " +
                                std::to_string(o.num_servers) + " and " +
                                std::to_string(o.num_workers) + ")");
  }
  o.param_count = layout.total();
  o.fingerprint = layout.fingerprint();
  o.total_steps = TotalSteps(train_opts, dataset.train.size());
  o.batch_size = train_opts.batch_size;
  o.eval = {train_opts.eval_every, train_opts.eval_every_s};
  o.max_train_s = train_opts.max_train_s;
  o.timeout_s = TimeoutSeconds();
  o.silence_s = FLAGS_silence_s > 0 ? FLAGS_silence_s : 5 * HeartbeatSeconds();
  o.progress_s = train_opts.progress_s;
  if (FLAGS_checkpoint_dir.empty() && UsesServers(mode))
    FLAGS_checkpoint_dir = FLAGS_out_dir + "/checkpoints";
  if (!FLAGS_resume.empty()) {
    const auto point = server::ChooseResumePoint(FLAGS_resume, o.num_servers);
    if (static_cast<int>(point.clocks.size()) != o.num_workers) {
      throw std::invalid_argument("the checkpoint in " + FLAGS_resume + " is of a job with " +
                                  std::to_string(point.clocks.size()) + " workers, not " +
                                  std::to_string(o.num_workers));
    }
    o.resume_version = point.version;
    o.start_steps = point.clocks;
    LOG(INFO) << "resuming from " << FLAGS_resume << " at version " << point.version;
  }
  o.flags = FlagValues();

  RunOutput out(FLAGS_out_dir);
  auto eval = MakeModelEvaluation(ctx, model, std::move(dataset.eval), train_opts.eval_batch_size,
                                  TimeoutSeconds(), out.Path("model.pt"));
  Coordinator coordinator(socket, o, eval.get(), &out, policy.get());
  std::unique_ptr<TraceFile> trace;
  if (!TracePath().empty()) {
    trace = std::make_unique<TraceFile>(TracePath());
    coordinator.set_trace(trace.get());
  }
  const int rc = coordinator.Run();
  if (trace) {
    trace->Close();
    LOG(INFO) << "timeline written to " << TracePath();
  }
  eval.reset();
  return rc;
}

}  // namespace
}  // namespace tteps::scheduler

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-scheduler: coordinates a tteps job (MPI rank 0).\n"
                     "  launch/tteps --mode sync --workers 2 --servers 1 -- [training flags]");
  torch::set_num_threads(FLAGS_threads);
  if (FLAGS_check) {
    try {
      return tteps::scheduler::CheckConfig();
    } catch (const std::exception& e) {
      LOG(ERROR) << e.what();
      return 1;
    }
  }
  return tteps::RunNode(tteps::Role::kScheduler, tteps::scheduler::Schedule);
}
