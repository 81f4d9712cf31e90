// One worker of a distributed job, from its registration to its report that it is done: its
// data and model, checked against the job's; the exchange of its mode; the step loop; and what
// the scheduler asks of it between steps (a join's start, a leave, a rollback to a checkpoint).
#pragma once

#include <memory>
#include <string>
#include <zmq.hpp>

#include "common/bootstrap.h"
#include "common/cluster_map.h"
#include "common/control_channel.h"
#include "common/job_config.h"
#include "common/node_flags.h"
#include "common/trace.h"
#include "model/dataset.h"
#include "model/deeptte/deeptte.h"
#include "worker/collectives/tcp_ring.h"
#include "worker/exchange/make_exchange.h"
#include "worker/scheduler_commands.h"
#include "worker/scheduler_link.h"
#include "worker/step_driver.h"

namespace tteps {

class WorkerProcess {
 public:
  // Under mpirun (or with --scheduler): binds the ring socket, registers with the scheduler,
  // follows the job and trains in it. Returns the exit code; a failure is logged and told to
  // the scheduler.
  static int Start(Bootstrap& boot, const NodeOptions& node);

 private:
  // `config` is the job's (the cluster map's); this node's own flags are applied on top.
  WorkerProcess(const Bootstrap& boot, const ClusterMap& map, JobConfig config,
                SchedulerCommands& commands, ControlChannel* control, zmq::context_t* ctx,
                collectives::TcpRing* ring);
  // Trains to the end of the job, or until this worker leaves it; throws what failed it.
  void Run();

  enum class Pass { kDone, kLeft, kRolledBack };

  // The data and the model, refused where they differ from the job's.
  void Load();
  void SetUpExchange(const Bootstrap& boot, zmq::context_t* ctx, collectives::TcpRing* ring);
  void SetUpDriver();
  // A worker that joined a running job: the adopted slice's step and schedule.
  void StartJoined();
  // Where the step loop starts on the current map (a resume or a rollback).
  void StartOnMap();
  // One pass of the step loop over the current map: to the job's end, a leave, or a rollback.
  Pass TrainPass();
  void RollBack(const std::string& why);

  const ClusterMap map_;
  JobConfig config_;
  SchedulerCommands& commands_;
  ControlChannel* control_;
  int id_ = 0, slice_ = 0;
  Dataset dataset_;
  deeptte::DeepTTE model_{nullptr};
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<SchedulerLink> link_;
  ExchangeContext ec_;
  DriverOptions options_;
  // The first pass starts with every worker (the scheduler's go); a joiner's and a rollback's
  // at once.
  bool with_go_;
  ClusterMap current_;  // the map of the pass in progress (a rollback's epoch replaces it)
};

}  // namespace tteps
