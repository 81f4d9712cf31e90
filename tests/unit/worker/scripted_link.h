// A StepLink whose answers a test scripts, one function each (empty: the default's answer).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "worker/step_driver.h"

namespace tteps {

struct ScriptedLink : StepLink {
  std::function<void()> ready;
  std::function<bool()> stop_requested;
  std::function<std::vector<StepCommand>()> take_commands;
  std::function<bool()> await_command;
  std::function<void(const AccumulationChange&)> accumulation_changed;
  std::function<void(const TrainReport&)> report;
  std::function<bool()> leave_requested;
  std::function<void(int64_t)> computing;
  std::function<void(int, int64_t)> released;
  std::function<void(int64_t, int64_t, double, bool)> evaluate;

  void Ready() override {
    if (ready) ready();
  }
  bool StopRequested() override { return stop_requested && stop_requested(); }
  std::vector<StepCommand> TakeCommands() override {
    return take_commands ? take_commands() : std::vector<StepCommand>{};
  }
  bool AwaitCommand() override { return await_command && await_command(); }
  void AccumulationChanged(const AccumulationChange& c) override {
    if (accumulation_changed) accumulation_changed(c);
  }
  void Report(const TrainReport& r) override {
    if (report) report(r);
  }
  bool LeaveRequested() override { return leave_requested && leave_requested(); }
  void Computing(int64_t step) override {
    if (computing) computing(step);
  }
  void Released(int slice, int64_t step) override {
    if (released) released(slice, step);
  }
  bool Evaluates() const override { return static_cast<bool>(evaluate); }
  void Evaluate(int64_t steps, int64_t epoch, double train_s, bool final) override {
    if (evaluate) evaluate(steps, epoch, train_s, final);
  }
};

}  // namespace tteps
