// A worker's one link to the scheduler: the views it follows (SchedulerCommands turns them into
// the step loop's commands and the membership's state), the reports it sends and its heartbeat's
// word that it computes. The step loop asks it as its StepLink, the exchange as its
// MembershipLink; WorkerProcess (worker/worker_process.h) owns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/control_channel.h"
#include "common/job_config.h"
#include "common/slice_schedule.h"
#include "model/deeptte/deeptte.h"
#include "worker/exchange/membership_link.h"
#include "worker/scheduler_commands.h"
#include "worker/step_driver.h"

namespace tteps {

class SchedulerLink : public StepLink, public MembershipLink {
 public:
  // Worker `id`; `model` is sent as the job's weights where this worker holds them (the ring
  // modes).
  SchedulerLink(SchedulerCommands& commands, ControlChannel* control, const JobConfig& config,
                int id, deeptte::DeepTTEImpl& model);

  // Reports ready at `start_step` and waits for the scheduler's go (every worker begins
  // together; a joiner alone, at the go's step).
  void SayReady(int64_t start_step);
  // The next pass of the step loop starts at `start_step` with `accumulation` micro-batches a
  // step, after the others' go (`with_go`: the job's start) or at once (a joiner, a rollback).
  void StartPass(int64_t start_step, int64_t accumulation, bool with_go);
  // A slice's schedule as the scheduler sent it (empty: this worker's accumulation throughout).
  SliceSchedule DecodeSchedule(int of, const std::string& text) const;
  SchedulerCommands& commands() { return commands_; }

  // StepLink
  void Ready() override;
  std::vector<StepCommand> TakeCommands() override;
  bool AwaitCommand() override;
  void AccumulationChanged(const AccumulationChange& change) override;
  void Report(const TrainReport& report) override;
  bool LeaveRequested() override;
  void Computing(int64_t step) override { control_->SetComputing(step); }
  void Released(int slice, int64_t step) override;
  bool Evaluates() const override;
  void Evaluate(int64_t steps, int64_t epoch, double train_s, bool final) override;

  // MembershipLink
  bool ViewChanged() override { return commands_.Interrupting(); }
  bool RollbackPending() override { return commands_.rollback_pending(); }
  const LostServers& lost_servers() override { return commands_.lost_servers(); }
  std::vector<int> LostWorkers() override { return commands_.LostWorkers(); }
  size_t lost_worker_count() override { return commands_.lost_worker_count(); }

 private:
  SchedulerCommands& commands_;
  ControlChannel* control_;
  const JobConfig& config_;
  const int id_;
  deeptte::DeepTTEImpl& model_;
  int64_t start_step_ = 0, accumulation_ = 1;
  bool with_go_ = false;
};

}  // namespace tteps
