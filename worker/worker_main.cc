// tteps-worker: trains DeepTTE. --mode=local trains in this one process (the reference run);
// under mpirun (launch/tteps) or with --scheduler it is a worker of a distributed job, whose
// configuration comes from the scheduler.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>
#include <zmq.hpp>

#include "common/bootstrap.h"
#include "common/cereal_body.h"
#include "common/clock.h"
#include "common/control_channel.h"
#include "common/curve.h"
#include "common/init.h"
#include "common/interrupt.h"
#include "common/lost_servers.h"
#include "common/node_flags.h"
#include "common/peak_memory.h"
#include "common/run_output.h"
#include "common/slice_schedule.h"
#include "worker/best_weights.h"
#include "worker/data/norm_stats.h"
#include "worker/data/trip_store.h"
#include "worker/dataset.h"
#include "worker/deeptte/checkpoint.h"
#include "worker/deeptte/compute_path.h"
#include "worker/device.h"
#include "worker/exchange/make_exchange.h"
#include "worker/exchange/worker_group.h"
#include "worker/job_flags.h"
#include "worker/local_run.h"
#include "worker/model_params.h"
#include "worker/model_setup.h"
#include "worker/scheduler_commands.h"
#include "worker/step_driver.h"
#include "worker/topics.h"

DEFINE_string(mode, "local",
              "local: train in this one process. Under mpirun (launch/tteps) the mode comes "
              "from the scheduler");
DEFINE_string(out_dir, "out", "output directory: metrics.jsonl, summary.json, model.pt");

namespace tteps {
namespace {

// Worker 0 of the ring modes holds the job's weights: it sends them to the scheduler, which
// evaluates them (and saves the final ones).
void SendSnapshot(ControlChannel* control, deeptte::DeepTTEImpl& model, int64_t steps, bool final) {
  const ParamLayout layout = LayoutOf(model);
  auto snap = std::make_shared<std::vector<float>>(layout.total());
  CopyParamsOut(model, layout, snap->data());
  Payload p;
  p.data = snap->data();
  p.count = snap->size();
  p.owner = std::move(snap);
  control->Report(topics::kSnapshot, {steps, final}, {p});
}

// Trains this worker's part of the job, from registration to the report that it is done.
void Train(const Bootstrap& boot, const ClusterMap& map, JobConfig config,
           SchedulerCommands& commands, ControlChannel* control, zmq::context_t* ctx,
           collectives::TcpRing* ring) {
  ApplyOwnFlags(&config);  // this node's own command line wins for this node
  config.Validate();
  torch::set_num_threads(config.train.threads);
  const torch::Device device = PrepareDevice(config.train);
  auto dataset = LoadDataset(config.data, config.model.kernel_size);
  if (dataset.store_checksum != map.data_checksum) {
    throw std::runtime_error(
        "the training data '" + config.data.train_files.front() + "' on host " + HostName() +
        (dataset.store_checksum.empty() ? " is not a trip store"
                                        : " is the store " + dataset.store_checksum) +
        (map.data_checksum.empty() ? ", the scheduler's is not a trip store"
                                   : ", the scheduler's is the store " + map.data_checksum) +
        ": every host needs the same data (a copy, or a shared file system)");
  }
  deeptte::DeepTTE model = BuildModel(config, dataset.stats, device);
  const ParamLayout layout = LayoutOf(*model);
  if (layout.fingerprint() != map.fingerprint || layout.total() != map.param_count) {
    throw std::runtime_error("model layout " + layout.Describe() + " differs from the job's (" +
                             std::to_string(map.param_count) + " floats, fingerprint " +
                             std::to_string(map.fingerprint) + ")");
  }
  const int id = map.your_id;
  // A worker that joined a running job computes a lost worker's slice (its id is beyond them).
  const int slice = map.own_slice >= 0 ? map.own_slice : id;
  LOG(INFO) << "worker " << id << " of " << map.workers.size() << ", mode "
            << ModeName(config.exchange.mode) << ", " << dataset.train->size()
            << " training trips, " << layout.Describe()
            << (slice != id ? ", joined: the slice of worker " + std::to_string(slice) : "");

  auto tracer = MakeNodeTracer(control, !config.output.trace.empty());
  if (tracer) {
    tracer->NameThread(1, "training");
    tracer->NameThread(WorkerGroup::kCommRow, "allreduce thread");
  }
  ExchangeContext ec;
  ec.config = config;
  ec.tracer = tracer.get();
  ec.control = control;
  ec.zmq = ctx;
  ec.workers_comm = boot.workers_comm;
  ec.interrupt = [&commands] { return commands.Interrupting(); };
  ec.lost_servers = &commands.lost_servers();
  ec.abort = [&commands] { return commands.rollback_pending(); };
  ec.tcp_ring = ring;
  ec.lost_workers = [&commands] { return commands.LostWorkers(); };
  ec.lost_worker_count = [&commands] { return commands.lost_worker_count(); };

  DriverOptions o;
  o.worker = slice;
  o.num_workers = SliceCount(map);  // the slicing rule's: one slice per worker unless --slices
  o.accumulation = config.exchange.accumulation;
  o.first_worker_batch = config.exchange.first_worker_batch;
  o.balanced_slices = config.exchange.slicing == "balanced";
  o.slowdown_percent = config.train.SlowdownOf(id);
  o.slowdown_on_s = config.train.slowdown_on_s;
  o.slowdown_period_s = config.train.slowdown_period_s;
  o.tracer = tracer.get();
  if (config.optimizer.lr_scaling != "none") o.noise_pieces = 1;  // its slice is a piece
  SetNoiseGeometry(config, &o);
  DriverHooks hooks;
  // Every worker begins together, once all have loaded their data (the training clock's start).
  // A joining worker begins alone, at the step the slice's adopter left it (the go's step).
  const auto ready = [&] {
    control->Report(topics::kReady, {o.start_step});
    control->WaitUntil([&] { return commands.go(); }, "the scheduler's go");
  };
  // A slice's schedule as the scheduler sent it (empty: this worker's accumulation throughout).
  const auto decode_schedule = [&](int of, const std::string& text) {
    if (text.empty()) return SliceSchedule(o.accumulation);
    try {
      return SliceSchedule::Decode(text);
    } catch (const CodecError& e) {
      throw std::runtime_error("the scheduler's schedule of slice " + std::to_string(of) + ": " +
                               e.what());
    }
  };
  if (slice != id) {
    ready();
    o.start_step = commands.go_step();
    const std::string schedule = commands.go_schedule();
    if (!schedule.empty()) {
      o.own_schedule = decode_schedule(slice, schedule);
      o.accumulation = o.own_schedule->AccumulationAt(o.start_step);
    }
    LOG(INFO) << "worker " << id << " computes the slice of worker " << slice << " from step "
              << o.start_step + 1 << " (" << o.accumulation << " micro-batches a step)";
  } else {
    hooks.ready = ready;
  }
  hooks.take_commands = [&] { return commands.TakeStepCommands(decode_schedule); };
  // Before the step's push, and flushed: once the scheduler declares this worker lost, it has
  // every change whose step a server may have counted.
  hooks.accumulation_changed = [control](const AccumulationChange& c) {
    control->Report(topics::kAccumulationChanged, c);
    control->Flush();
  };
  hooks.await_command = [&] {
    // The scheduler ends the pause, or fails the job after --timeout_s; a margin past that.
    control->WaitUntil([&] { return commands.StepCommandQueued() || commands.rollback_pending(); },
                       "a worker to join (--min_workers)",
                       config.cluster.timeout_s + 2 * config.cluster.heartbeat_s + 2);
    return !commands.rollback_pending();
  };
  hooks.released = [control](int released, int64_t step) {
    control->Report(topics::kReleased, {released, step});
  };
  hooks.report = [control](const TrainReport& r) { control->Report(topics::kTrainReport, r); };
  hooks.computing = [control](int64_t step) { control->SetComputing(step); };
  // SIGTERM or SIGINT to this worker, or the scheduler's leave (launch/tteps --release): it
  // leaves the job at the next step boundary.
  CatchInterrupts();
  hooks.leave_requested = [&commands] {
    return InterruptSignal() != 0 || commands.leave_requested();
  };
  if (!UsesServers(config.exchange.mode)) {
    // The first live worker sends them (worker 0 until it is lost, in ring mode).
    hooks.evaluate = [&](int64_t steps, int64_t /*epoch*/, double /*train_s*/, bool final) {
      const std::vector<int> lost = commands.LostWorkers();
      int first = 0;
      while (std::find(lost.begin(), lost.end(), first) != lost.end()) ++first;
      if (first == id) SendSnapshot(control, *model, steps, final);
    };
  }
  // One pass per epoch of the cluster map: a rollback (a server lost without a replica) ends
  // the pass wherever it is, and the next trains again from the checkpoint's step on the new
  // servers. The data order depends on the step only, so the steps redone are the same.
  ClusterMap current = map;
  const auto roll_back = [&](const std::string& why) {
    o.start_step = current.start_steps.at(slice);
    LOG(WARNING) << "worker " << id << " rolls back to step " << o.start_step << " (epoch "
                 << current.epoch << "): " << why;
    hooks.ready = nullptr;  // the others roll back too; no second go
    commands.RestartQueue();
  };
  for (;;) {
    ec.map = &current;
    if (current.resume_version >= 0 && slice == id) o.start_step = current.start_steps.at(id);
    // Resumed or rolled back after a policy changed accumulations: the slice's schedule says
    // where its stream stands at the first step, and what that step draws.
    if (current.resume_version >= 0 && static_cast<size_t>(slice) < current.schedules.size() &&
        !current.schedules[slice].empty()) {
      o.own_schedule = decode_schedule(slice, current.schedules[slice]);
      o.accumulation = o.own_schedule->AccumulationAt(o.start_step);
      LOG(INFO) << "worker " << id << " starts again at step " << o.start_step + 1 << ": its "
                << "slice's stream at micro-batch " << o.own_schedule->PositionAt(o.start_step)
                << ", " << o.accumulation << " micro-batches a step";
    }
    DriverResult r;
    try {
      auto exchange = MakeExchange(*model, ec);
      r = StepDriver(*model, *dataset.train, config.train, o, hooks, exchange.get()).Run();
    } catch (const std::exception& e) {
      if (!commands.TakeRollback(&current)) throw;
      roll_back(e.what());
      continue;
    }
    if (tracer) tracer->Flush();  // the timeline reaches the scheduler before "done"
    if (r.left) {
      // Its slices go to the others at once; the job goes on without it.
      const std::string why =
          InterruptSignal() != 0 ? SignalName(InterruptSignal()) : "launch/tteps --release";
      control->Report(topics::kLeaving, {r.steps, why});
      control->Flush();
      LOG(WARNING) << "worker " << id << " leaves the job after step " << r.steps << " (" << why
                   << ")";
      NoteLostPeer();  // MPI's finalize does not wait for the job's end
      return;
    }
    control->Report(topics::kDone, {r.steps, current.epoch});
    control->Flush();
    // The job ends when the scheduler has the final evaluation; losing it before is a failure.
    // A rollback may still come (a server lost while another worker trains).
    control->WaitForShutdown([&] { return commands.rollback_pending(); });
    if (commands.TakeRollback(&current)) {
      roll_back("a server was lost after this worker finished");
      continue;
    }
    break;
  }
  std::string reason;
  bool failed = false;
  if (control->ShutdownRequested(&reason, &failed) && failed) throw std::runtime_error(reason);
}

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
    Train(boot, map, map.config, commands, &control, &ctx, &ring);
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
      if (config.exchange.mode != tteps::Mode::kLocal) {
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
