// tteps-worker: trains DeepTTE. --mode=local trains in this one process (the reference run).
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <zmq.hpp>

#include "common/bootstrap.h"
#include "common/control_channel.h"
#include "common/init.h"
#include "common/kv_client.h"
#include "common/peak_memory.h"
#include "common/run_output.h"
#include "worker/data/norm_stats.h"
#include "worker/deeptte/checkpoint.h"
#include "worker/local_trainer.h"
#include "worker/model_params.h"
#include "worker/ps_worker.h"
#include "worker/ring_worker.h"
#include "worker/worker_flags.h"

DEFINE_string(mode, "local",
              "local: train in this one process. Under mpirun (launch/tteps) the mode comes "
              "from the scheduler");
DEFINE_string(out_dir, "out", "output directory: metrics.jsonl, summary.json, model.pt");

namespace tteps {
namespace {

int RunLocal() {
  auto model_config = ModelConfigFromFlags();
  auto train_opts = TrainOptionsFromFlags();
  auto dataset = LoadDataset(DatasetOptionsFromFlags());
  LOG(INFO) << "data: " << dataset.description;
  auto stats = data::LoadNormStats(FLAGS_stats);

  torch::manual_seed(train_opts.seed);
  deeptte::DeepTTE model(model_config, stats);
  const ParamLayout layout = LayoutOf(*model);
  LOG(INFO) << "model: " << model_config.ToString() << "; parameters: " << layout.Describe();

  RunOutput out(FLAGS_out_dir);
  LocalTrainer trainer(model, dataset.train, dataset.eval, train_opts, &out);
  std::unique_ptr<TraceFile> trace_file;
  std::unique_ptr<Tracer> tracer;
  if (!TracePath().empty()) {
    trace_file = std::make_unique<TraceFile>(TracePath());
    tracer = std::make_unique<Tracer>(200, "local worker",
                                      [&](std::string events) { trace_file->Append(events); });
    trainer.set_tracer(tracer.get());
  }
  TrainResult r = trainer.Run();
  if (tracer) {
    tracer->Flush();
    trace_file->Close();
  }
  deeptte::SaveModel(model, out.Path("model.pt"));

  JsonObject summary;
  summary.Add("mode", "local")
      .Add("workers", 1)
      .Add("servers", 0)
      .Add("epochs", r.epochs)
      .Add("steps", r.steps)
      .Add("batch_size", train_opts.batch_size)
      .Add("trips", r.trips)
      .Add("trips_per_s", r.trips / r.train_seconds)
      .Add("train_seconds", r.train_seconds)
      .Add("wall_seconds", r.wall_seconds)
      .Add("final_loss", r.last_loss)
      .Add("parameters", layout.total())
      .Add("threads", FLAGS_threads)
      .Add("peak_rss_mb", JsonObject().Add("workers", std::vector<double>{PeakRssMb()}))
      .Add("final_eval", r.final_eval.ToJson())
      .Add("model", out.Path("model.pt"));
  out.WriteSummary(summary);
  LOG(INFO) << "wrote " << out.Path("summary.json") << ", " << out.Path("metrics.jsonl") << ", "
            << out.Path("model.pt");
  std::printf("%s\n", JsonObject()
                          .Add("final_eval", r.final_eval.ToJson())
                          .Add("trips_per_s", r.trips / r.train_seconds)
                          .Add("out_dir", out.dir())
                          .str()
                          .c_str());
  return 0;
}

// A worker of the ring modes: gradients (or parameters) are summed over the workers'
// communicator with the chosen allreduce.
void RunRing(const Bootstrap& boot, const ClusterMap& map, ControlChannel* control,
             deeptte::DeepTTE model, const std::vector<data::Trip>& train,
             const TrainOptions& train_opts, int64_t slowdown) {
  if (boot.workers_comm == MPI_COMM_NULL) {
    throw std::runtime_error("--mode " + map.mode + " needs mpirun (launch/tteps)");
  }
  int comm_rank = -1;
  MPI_Comm_rank(boot.workers_comm, &comm_rank);
  if (comm_rank != map.your_id) {
    throw std::logic_error("worker id " + std::to_string(map.your_id) + " is rank " +
                           std::to_string(comm_rank) + " of the workers' communicator");
  }
  RingWorkerOptions ro;
  ro.ring = RingOptionsFromFlags(map.mode);
  ro.worker = map.your_id;
  ro.num_workers = static_cast<int>(map.workers.size());
  ro.accumulation = FLAGS_accumulation;
  ro.first_worker_batch = FLAGS_first_worker_batch;
  ro.slowdown_percent = slowdown;
  ro.timeout_s = TimeoutSeconds();
  for (const auto& w : map.workers) ro.worker_names.push_back(w.Name());
  auto tracer = MakeNodeTracer(control);
  ro.tracer = tracer.get();
  if (tracer) {
    tracer->NameThread(1, "training");
    tracer->NameThread(RingWorker::kCommRow, "allreduce thread");
  }
  auto allreduce = collectives::MakeAllreduce(ro.ring.allreduce, boot.workers_comm);
  RingWorker(model, train, train_opts, ro, allreduce.get(), control).Run();
}

// Under mpirun (or with --scheduler): a worker of a parameter-server or ring job. Its configuration
// comes from the scheduler with the cluster map.
int RunDistributed(Bootstrap& boot) {
  ShareSchedulerEndpoint(&boot, "");
  zmq::context_t ctx;
  ControlChannel control(ctx, boot.scheduler_endpoint, SelfInfo(Role::kWorker, boot),
                         TimeoutSeconds(), HeartbeatSeconds());
  const ClusterMap map = control.Register();
  ApplyJobFlags(map.flags);
  control.Start();
  try {
    torch::set_num_threads(FLAGS_threads);
    auto train_opts = TrainOptionsFromFlags();
    auto dataset = LoadDataset(DatasetOptionsFromFlags());
    torch::manual_seed(train_opts.seed);
    deeptte::DeepTTE model(ModelConfigFromFlags(), data::LoadNormStats(FLAGS_stats));
    const ParamLayout layout = LayoutOf(*model);
    if (layout.fingerprint() != map.fingerprint || layout.total() != map.param_count) {
      throw std::runtime_error("model layout " + layout.Describe() + " differs from the job's (" +
                               std::to_string(map.param_count) + " floats, fingerprint " +
                               std::to_string(map.fingerprint) + ")");
    }
    const int id = map.your_id, workers = static_cast<int>(map.workers.size());
    const int64_t slowdown = FLAGS_slowdown_worker == id ? FLAGS_slowdown : 0;
    LOG(INFO) << "worker " << id << " of " << workers << ", mode " << map.mode << ", "
              << dataset.train.size() << " training trips, " << layout.Describe();
    if (map.mode == "ring" || map.mode == "average") {
      RunRing(boot, map, &control, model, dataset.train, train_opts, slowdown);
    } else {
      PsWorkerOptions ps;
      ps.mode = map.mode;
      ps.worker = id;
      ps.num_workers = workers;
      ps.accumulation = FLAGS_accumulation;
      ps.first_worker_batch = FLAGS_first_worker_batch;
      ps.slowdown_percent = slowdown;
      if (map.resume_version >= 0) ps.start_step = map.start_steps.at(ps.worker);
      KVClient kv(ctx, map, control.self(), TimeoutSeconds(),
                  [&] { return control.ShutdownRequested(); });
      auto tracer = MakeNodeTracer(&control);
      ps.tracer = tracer.get();
      PsWorker(model, dataset.train, train_opts, ps, &kv, &control).Run();
    }
    return 0;
  } catch (const std::exception& e) {
    std::string reason;
    bool failed = false;
    if (control.ShutdownRequested(&reason, &failed) && failed) {
      LOG(ERROR) << "worker " << map.your_id << " stops: " << reason;
    } else {
      LOG(ERROR) << e.what();
      control.Send(MsgType::kError, 0, e.what());
      control.Flush();
    }
    return 1;
  }
}

bool UnderMpi() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size != nullptr && std::atoi(size) > 1;
}

}  // namespace
}  // namespace tteps

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-worker: trains the DeepTTE travel-time model.\n"
                     "  tteps-worker --mode=local [--train_data FILE] [--out_dir DIR] ...");
  torch::set_num_threads(FLAGS_threads);
  const bool distributed = tteps::SchedulerFlagGiven() || tteps::UnderMpi();
  if (!distributed) {
    try {
      if (FLAGS_mode == "local") return tteps::RunLocal();
      LOG(ERROR) << "--mode=" << FLAGS_mode
                 << " needs a scheduler: start the job with launch/tteps (mpirun)";
      return 2;
    } catch (const std::exception& e) {
      LOG(ERROR) << e.what();
      return 1;
    }
  }
  return tteps::RunNode(tteps::Role::kWorker, tteps::RunDistributed);
}
