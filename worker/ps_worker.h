// A worker of the parameter-server modes: pull (the version it needs) -> copy into the model ->
// alpha micro-batches of forward/backward -> push the gradient sum and sample count.
#pragma once

#include <chrono>
#include <vector>

#include "common/control_channel.h"
#include "common/kv_client.h"
#include "common/trace.h"
#include "worker/data/trip.h"
#include "worker/deeptte/deeptte.h"
#include "worker/train_options.h"

namespace tteps {

struct PsWorkerOptions {
  std::string mode;  // sync | async | ssp
  int worker = 0, num_workers = 1;
  int64_t accumulation = 1;         // micro-batches per push (the scheduler may change it)
  int64_t first_worker_batch = -1;  // slicing rule; -1: even split
  int64_t slowdown_percent = 0;     // test knob: sleep this % of compute time after each step
  int64_t start_step = 0;           // > 0 when resuming from a checkpoint
  Tracer* tracer = nullptr;         // --trace: spans of compute, push, pull and wait
};

class PsWorker {
 public:
  PsWorker(deeptte::DeepTTE model, const std::vector<data::Trip>& train, const TrainOptions& opts,
           const PsWorkerOptions& ps, KVClient* kv, ControlChannel* control);
  // Runs every step; throws std::runtime_error (naming the peer) on a failed exchange.
  void Run();

 private:
  using Clock = std::chrono::steady_clock;
  void TraceExchange(Clock::time_point begin, const PullResult& r);

  deeptte::DeepTTE model_;
  const std::vector<data::Trip>& train_;
  TrainOptions opts_;
  PsWorkerOptions ps_;
  KVClient* kv_;
  ControlChannel* control_;
};

}  // namespace tteps
