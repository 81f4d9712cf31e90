#include "worker/worker_process.h"

#include <glog/logging.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "common/curve.h"
#include "common/interrupt.h"
#include "common/job_flags.h"
#include "common/lost_servers.h"
#include "common/slice_schedule.h"
#include "common/topics/worker_topics.h"
#include "model/data/trip_store.h"
#include "model/model_params.h"
#include "worker/exchange/worker_group.h"
#include "worker/model_setup.h"

namespace tteps {
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
      with_go_(slice_ == id_),
      current_(map) {
  ApplyOwnFlags(&config_);  // this node's own command line wins for this node
  config_.Validate();
  torch::set_num_threads(config_.train.threads);
  Load();
  link_ = std::make_unique<SchedulerLink>(commands_, control_, config_, id_, *model_);
  SetUpExchange(boot, ctx, ring);
  SetUpDriver();
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
  ec_.membership = link_.get();
  ec_.tcp_ring = ring;
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

void WorkerProcess::StartJoined() {
  link_->SayReady(options_.start_step);
  options_.start_step = commands_.go_step();
  const std::string schedule = commands_.go_schedule();
  if (!schedule.empty()) {
    options_.own_schedule = link_->DecodeSchedule(slice_, schedule);
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
    options_.own_schedule = link_->DecodeSchedule(slice_, current_.schedules[slice_]);
    options_.accumulation = options_.own_schedule->AccumulationAt(options_.start_step);
    LOG(INFO) << "worker " << id_ << " starts again at step " << options_.start_step + 1
              << ": its slice's stream at micro-batch "
              << options_.own_schedule->PositionAt(options_.start_step) << ", "
              << options_.accumulation << " micro-batches a step";
  }
  link_->StartPass(options_.start_step, options_.accumulation, with_go_);
}

void WorkerProcess::RollBack(const std::string& why) {
  options_.start_step = current_.start_steps.at(slice_);
  LOG(WARNING) << "worker " << id_ << " rolls back to step " << options_.start_step << " (epoch "
               << current_.epoch << "): " << why;
  with_go_ = false;  // the others roll back too; no second go
  commands_.RestartQueue();
}

WorkerProcess::Pass WorkerProcess::TrainPass() {
  StartOnMap();
  DriverResult r;
  try {
    auto exchange = MakeExchange(*model_, ec_);
    r = StepDriver(*model_, *dataset_.train, config_.train, options_, link_.get(), exchange.get())
            .Run();
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

int WorkerProcess::Start(Bootstrap& boot, const NodeOptions& node) {
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
  commands.Listen(&control, map);
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

}  // namespace tteps
