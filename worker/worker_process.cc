#include "worker/worker_process.h"

#include <glog/logging.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "common/interrupt.h"
#include "common/lost_servers.h"
#include "common/slice_schedule.h"
#include "worker/exchange/worker_group.h"
#include "worker/job_flags.h"
#include "worker/model_params.h"
#include "worker/model_setup.h"
#include "worker/topics.h"

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

}  // namespace

WorkerProcess::WorkerProcess(const Bootstrap& boot, const ClusterMap& map, JobConfig config,
                             SchedulerCommands& commands, ControlChannel* control,
                             zmq::context_t* ctx, collectives::TcpRing* ring)
    : map_(map),
      config_(std::move(config)),
      commands_(commands),
      control_(control),
      id_(map.your_id),
      // A worker that joined a running job computes a lost worker's slice (its id is beyond).
      slice_(map.own_slice >= 0 ? map.own_slice : map.your_id),
      current_(map) {
  ApplyOwnFlags(&config_);  // this node's own command line wins for this node
  config_.Validate();
  torch::set_num_threads(config_.train.threads);
  Load();
  SetUpExchange(boot, ctx, ring);
  SetUpDriver();
  SetUpHooks();
}

void WorkerProcess::Load() {
  const torch::Device device = PrepareDevice(config_.train);
  dataset_ = LoadDataset(config_.data, config_.model.kernel_size);
  if (dataset_.store_checksum != map_.data_checksum) {
    throw std::runtime_error(
        "the training data '" + config_.data.train_files.front() + "' on host " + HostName() +
        (dataset_.store_checksum.empty() ? " is not a trip store"
                                         : " is the store " + dataset_.store_checksum) +
        (map_.data_checksum.empty() ? ", the scheduler's is not a trip store"
                                    : ", the scheduler's is the store " + map_.data_checksum) +
        ": every host needs the same data (a copy, or a shared file system)");
  }
  model_ = BuildModel(config_, dataset_.stats, device);
  const ParamLayout layout = LayoutOf(*model_);
  if (layout.fingerprint() != map_.fingerprint || layout.total() != map_.param_count) {
    throw std::runtime_error("model layout " + layout.Describe() + " differs from the job's (" +
                             std::to_string(map_.param_count) + " floats, fingerprint " +
                             std::to_string(map_.fingerprint) + ")");
  }
  LOG(INFO) << "worker " << id_ << " of " << map_.workers.size() << ", mode "
            << ModeName(config_.exchange.mode) << ", " << dataset_.train->size()
            << " training trips, " << layout.Describe()
            << (slice_ != id_ ? ", joined: the slice of worker " + std::to_string(slice_) : "");
}

void WorkerProcess::SetUpExchange(const Bootstrap& boot, zmq::context_t* ctx,
                                  collectives::TcpRing* ring) {
  tracer_ = MakeNodeTracer(control_, !config_.output.trace.empty());
  if (tracer_) {
    tracer_->NameThread(1, "training");
    tracer_->NameThread(WorkerGroup::kCommRow, "allreduce thread");
  }
  ec_.config = config_;
  ec_.tracer = tracer_.get();
  ec_.control = control_;
  ec_.zmq = ctx;
  ec_.workers_comm = boot.workers_comm;
  ec_.interrupt = [this] { return commands_.Interrupting(); };
  ec_.lost_servers = &commands_.lost_servers();
  ec_.abort = [this] { return commands_.rollback_pending(); };
  ec_.tcp_ring = ring;
  ec_.lost_workers = [this] { return commands_.LostWorkers(); };
  ec_.lost_worker_count = [this] { return commands_.lost_worker_count(); };
}

void WorkerProcess::SetUpDriver() {
  DriverOptions& o = options_;
  o.worker = slice_;
  o.num_workers = SliceCount(map_);  // the slicing rule's: one slice per worker unless --slices
  o.accumulation = config_.exchange.accumulation;
  o.first_worker_batch = config_.exchange.first_worker_batch;
  o.balanced_slices = config_.exchange.slicing == "balanced";
  o.slowdown_percent = config_.train.SlowdownOf(id_);
  o.slowdown_on_s = config_.train.slowdown_on_s;
  o.slowdown_period_s = config_.train.slowdown_period_s;
  o.tracer = tracer_.get();
  if (config_.optimizer.lr_scaling != "none") o.noise_pieces = 1;  // its slice is a piece
  SetNoiseGeometry(config_, &o);
}

void WorkerProcess::Ready() {
  control_->Report(topics::kReady, {options_.start_step});
  control_->WaitUntil([this] { return commands_.go(); }, "the scheduler's go");
}

SliceSchedule WorkerProcess::DecodeSchedule(int of, const std::string& text) const {
  if (text.empty()) return SliceSchedule(options_.accumulation);
  try {
    return SliceSchedule::Decode(text);
  } catch (const CodecError& e) {
    throw std::runtime_error("the scheduler's schedule of slice " + std::to_string(of) + ": " +
                             e.what());
  }
}

void WorkerProcess::SetUpHooks() {
  ControlChannel* control = control_;
  // Every worker begins together, once all have loaded their data (the training clock's start).
  // A joining worker begins alone, at the step the slice's adopter left it (the go's step).
  if (slice_ == id_) hooks_.ready = [this] { Ready(); };
  hooks_.take_commands = [this] {
    return commands_.TakeStepCommands(
        [this](int of, const std::string& text) { return DecodeSchedule(of, text); });
  };
  // Before the step's push, and flushed: once the scheduler declares this worker lost, it has
  // every change whose step a server may have counted.
  hooks_.accumulation_changed = [control](const AccumulationChange& c) {
    control->Report(topics::kAccumulationChanged, c);
    control->Flush();
  };
  hooks_.await_command = [this] {
    // The scheduler ends the pause, or fails the job after --timeout_s; a margin past that.
    control_->WaitUntil(
        [this] { return commands_.StepCommandQueued() || commands_.rollback_pending(); },
        "a worker to join (--min_workers)",
        config_.cluster.timeout_s + 2 * config_.cluster.heartbeat_s + 2);
    return !commands_.rollback_pending();
  };
  hooks_.released = [control](int released, int64_t step) {
    control->Report(topics::kReleased, {released, step});
  };
  hooks_.report = [control](const TrainReport& r) { control->Report(topics::kTrainReport, r); };
  hooks_.computing = [control](int64_t step) { control->SetComputing(step); };
  // SIGTERM or SIGINT to this worker (caught from Run's first step on), or the scheduler's
  // leave (launch/tteps --release): it leaves the job at the next step boundary.
  hooks_.leave_requested = [this] { return InterruptSignal() != 0 || commands_.leave_requested(); };
  if (!UsesServers(config_.exchange.mode)) {
    // The first live worker sends them (worker 0 until it is lost, in ring mode).
    hooks_.evaluate = [this](int64_t steps, int64_t /*epoch*/, double /*train_s*/, bool final) {
      const std::vector<int> lost = commands_.LostWorkers();
      int first = 0;
      while (std::find(lost.begin(), lost.end(), first) != lost.end()) ++first;
      if (first == id_) SendSnapshot(control_, *model_, steps, final);
    };
  }
}

void WorkerProcess::StartJoined() {
  Ready();
  options_.start_step = commands_.go_step();
  const std::string schedule = commands_.go_schedule();
  if (!schedule.empty()) {
    options_.own_schedule = DecodeSchedule(slice_, schedule);
    options_.accumulation = options_.own_schedule->AccumulationAt(options_.start_step);
  }
  LOG(INFO) << "worker " << id_ << " computes the slice of worker " << slice_ << " from step "
            << options_.start_step + 1 << " (" << options_.accumulation << " micro-batches a step)";
}

void WorkerProcess::StartOnMap() {
  ec_.map = &current_;
  if (current_.resume_version >= 0 && slice_ == id_) {
    options_.start_step = current_.start_steps.at(id_);
  }
  // Resumed or rolled back after a policy changed accumulations: the slice's schedule says
  // where its stream stands at the first step, and what that step draws.
  if (current_.resume_version >= 0 && static_cast<size_t>(slice_) < current_.schedules.size() &&
      !current_.schedules[slice_].empty()) {
    options_.own_schedule = DecodeSchedule(slice_, current_.schedules[slice_]);
    options_.accumulation = options_.own_schedule->AccumulationAt(options_.start_step);
    LOG(INFO) << "worker " << id_ << " starts again at step " << options_.start_step + 1
              << ": its slice's stream at micro-batch "
              << options_.own_schedule->PositionAt(options_.start_step) << ", "
              << options_.accumulation << " micro-batches a step";
  }
}

void WorkerProcess::RollBack(const std::string& why) {
  options_.start_step = current_.start_steps.at(slice_);
  LOG(WARNING) << "worker " << id_ << " rolls back to step " << options_.start_step << " (epoch "
               << current_.epoch << "): " << why;
  hooks_.ready = nullptr;  // the others roll back too; no second go
  commands_.RestartQueue();
}

WorkerProcess::Pass WorkerProcess::TrainPass() {
  StartOnMap();
  DriverResult r;
  try {
    auto exchange = MakeExchange(*model_, ec_);
    r = StepDriver(*model_, *dataset_.train, config_.train, options_, hooks_, exchange.get()).Run();
  } catch (const std::exception& e) {
    if (!commands_.TakeRollback(&current_)) throw;
    RollBack(e.what());
    return Pass::kRolledBack;
  }
  if (tracer_) tracer_->Flush();  // the timeline reaches the scheduler before "done"
  if (r.left) {
    // Its slices go to the others at once; the job goes on without it.
    const std::string why =
        InterruptSignal() != 0 ? SignalName(InterruptSignal()) : "launch/tteps --release";
    control_->Report(topics::kLeaving, {r.steps, why});
    control_->Flush();
    LOG(WARNING) << "worker " << id_ << " leaves the job after step " << r.steps << " (" << why
                 << ")";
    NoteLostPeer();  // MPI's finalize does not wait for the job's end
    return Pass::kLeft;
  }
  control_->Report(topics::kDone, {r.steps, current_.epoch});
  control_->Flush();
  // The job ends when the scheduler has the final evaluation; losing it before is a failure.
  // A rollback may still come (a server lost while another worker trains).
  control_->WaitForShutdown([this] { return commands_.rollback_pending(); });
  if (commands_.TakeRollback(&current_)) {
    RollBack("a server was lost after this worker finished");
    return Pass::kRolledBack;
  }
  return Pass::kDone;
}

void WorkerProcess::Run() {
  if (slice_ != id_) StartJoined();
  CatchInterrupts();
  // One pass per epoch of the cluster map: a rollback (a server lost without a replica) ends
  // the pass wherever it is, and the next trains again from the checkpoint's step on the new
  // servers. The data order depends on the step only, so the steps redone are the same.
  Pass pass;
  while ((pass = TrainPass()) == Pass::kRolledBack) {
  }
  if (pass == Pass::kLeft) return;
  std::string reason;
  bool failed = false;
  if (control_->ShutdownRequested(&reason, &failed) && failed) throw std::runtime_error(reason);
}

}  // namespace tteps
