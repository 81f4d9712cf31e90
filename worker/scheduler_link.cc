#include "worker/scheduler_link.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "common/codec.h"
#include "common/interrupt.h"
#include "common/topics/worker_topics.h"
#include "model/model_params.h"

namespace tteps {

SchedulerLink::SchedulerLink(SchedulerCommands& commands, ControlChannel* control,
                             const JobConfig& config, int id, deeptte::DeepTTEImpl& model)
    : commands_(commands),
      control_(control),
      config_(config),
      id_(id),
      model_(model),
      accumulation_(config.exchange.accumulation) {}

void SchedulerLink::SayReady(int64_t start_step) {
  control_->Report(topics::kReady, {start_step});
  control_->WaitUntil([this] { return commands_.go(); }, "the scheduler's go");
}

void SchedulerLink::StartPass(int64_t start_step, int64_t accumulation, bool with_go) {
  start_step_ = start_step;
  accumulation_ = accumulation;
  with_go_ = with_go;
}

SliceSchedule SchedulerLink::DecodeSchedule(int of, const std::string& text) const {
  if (text.empty()) return SliceSchedule(accumulation_);
  try {
    return SliceSchedule::Decode(text);
  } catch (const CodecError& e) {
    throw std::runtime_error("the scheduler's schedule of slice " + std::to_string(of) + ": " +
                             e.what());
  }
}

void SchedulerLink::Ready() {
  if (with_go_) SayReady(start_step_);
}

std::vector<StepCommand> SchedulerLink::TakeCommands() {
  return commands_.TakeStepCommands(
      [this](int of, const std::string& text) { return DecodeSchedule(of, text); });
}

bool SchedulerLink::AwaitCommand() {
  // The scheduler ends the pause, or fails the job after --timeout_s; a margin past that.
  control_->WaitUntil(
      [this] { return commands_.StepCommandQueued() || commands_.rollback_pending(); },
      "a worker to join (--min_workers)",
      config_.cluster.timeout_s + 2 * config_.cluster.heartbeat_s + 2);
  return !commands_.rollback_pending();
}

void SchedulerLink::AccumulationChanged(const AccumulationChange& change) {
  // Before the step's push, and flushed: once the scheduler declares this worker lost, it has
  // every change whose step a server may have counted.
  control_->Report(topics::kAccumulationChanged, change);
  control_->Flush();
}

void SchedulerLink::Report(const TrainReport& report) {
  control_->Report(topics::kTrainReport, report);
}

bool SchedulerLink::LeaveRequested() {
  // SIGTERM or SIGINT to this worker (caught from its first step on), or the scheduler's leave
  // (launch/tteps --release): it leaves the job at the next step boundary.
  return InterruptSignal() != 0 || commands_.leave_requested();
}

void SchedulerLink::Released(int slice, int64_t step) {
  control_->Report(topics::kReleased, {slice, step});
}

bool SchedulerLink::Evaluates() const {
  // Without servers the workers hold the job's weights: the scheduler evaluates the snapshots
  // of the first live one.
  return !UsesServers(config_.exchange.mode);
}

void SchedulerLink::Evaluate(int64_t steps, int64_t /*epoch*/, double /*train_s*/, bool final) {
  const std::vector<int> lost = commands_.LostWorkers();
  int first = 0;  // worker 0 until it is lost
  while (std::find(lost.begin(), lost.end(), first) != lost.end()) ++first;
  if (first != id_) return;
  const ParamLayout layout = LayoutOf(model_);
  auto snap = std::make_shared<std::vector<float>>(layout.total());
  CopyParamsOut(model_, layout, snap->data());
  Payload p;
  p.data = snap->data();
  p.count = snap->size();
  p.owner = std::move(snap);
  control_->Report(topics::kSnapshot, {steps, final}, {p});
}

}  // namespace tteps
