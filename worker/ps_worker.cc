#include "worker/ps_worker.h"

#include <glog/logging.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "common/json_writer.h"
#include "server/optimizer.h"  // SquaredNorm
#include "worker/gradient_step.h"
#include "worker/model_params.h"
#include "worker/slice_stream.h"
#include "worker/train_window.h"

namespace tteps {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// L2 norm of sum / trips, for servers that clip each push by its global norm.
double MeanGradNorm(const std::vector<float>& sum, int64_t trips) {
  if (trips == 0) return 0;
  return std::sqrt(server::SquaredNorm(sum.data(), sum.size())) / static_cast<double>(trips);
}

}  // namespace

PsWorker::PsWorker(deeptte::DeepTTE model, const std::vector<data::Trip>& train,
                   const TrainOptions& opts, const PsWorkerOptions& ps, KVClient* kv,
                   ControlChannel* control)
    : model_(std::move(model)), train_(train), opts_(opts), ps_(ps), kv_(kv), control_(control) {}

// The exchange of a step on the timeline, in pieces that do not overlap: the push until every
// server acknowledged it, the time a server held the pull for other workers (wait), then the
// rest of the pull.
void PsWorker::TraceExchange(Clock::time_point begin, const PullResult& r) {
  if (!ps_.tracer) return;
  const auto end = Clock::now();
  const auto at = [&](double s) {
    return std::min(
        end, begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)));
  };
  Tracer* tr = ps_.tracer;
  tr->Span("push", begin, at(r.push_s));
  if (end <= at(r.push_s)) return;
  if (r.held_s > 0) tr->Span("wait", at(r.push_s), at(r.push_s + r.held_s));
  if (end > at(r.push_s + r.held_s)) tr->Span("pull", at(r.push_s + r.held_s), end);
}

void PsWorker::Run() {
  const ParamLayout layout = LayoutOf(*model_);
  std::vector<float> params(layout.total());
  if (ps_.worker == 0 && ps_.start_step == 0) {
    CopyParamsOut(*model_, layout, params.data());
    kv_->Init(params.data());
  }
  const int64_t total_steps = TotalSteps(opts_, train_.size());
  SliceStream stream(train_, opts_, ps_.num_workers, ps_.worker, ps_.first_worker_batch);
  std::shared_ptr<std::vector<float>> grad;
  int64_t alpha = ps_.accumulation;
  // Resuming: skip the data the first start_step steps consumed (same accumulation assumed).
  for (int64_t i = 0; i < ps_.start_step * alpha; ++i) stream.Next();

  TrainWindow win;
  double win_push = 0, win_pull = 0, win_staleness = 0;  // this mode's own sums
  // What a pull before step t waits for: sync, version t; SSP, the slowest clock >= t - s.
  auto want = [&](int64_t t) { return ps_.mode == "async" ? 0 : t; };
  // Every worker begins together, once all have loaded their data (the training clock's start).
  control_->Send(MsgType::kMetrics, ps_.start_step, TrainStartJson(ps_.worker));
  control_->WaitForGo();
  const auto start = Clock::now();
  auto t = Clock::now();
  PullResult pulled = kv_->Pull(want(ps_.start_step), params.data());
  // The first pull is counted in the first step; later pulls in the exchange that ends a step.
  double carry_wait = pulled.held_s, carry_pull = std::max(0.0, Since(t) - pulled.held_s);
  int64_t steps_done = total_steps;
  for (int64_t step = ps_.start_step; step < total_steps; ++step) {
    const auto step_start = Clock::now();
    if (control_->alpha() > 0) alpha = control_->alpha();
    CopyParamsIn(*model_, layout, params.data());

    t = Clock::now();
    const auto compute_start = t;
    model_->zero_grad();
    MicroBatchStats sum;
    for (int64_t a = 0; a < alpha; ++a) {
      auto s = AccumulateGradients(*model_, train_, stream.Next());
      sum.loss_sum += s.loss_sum;
      sum.trips += s.trips;
    }
    // A buffer still referenced by an unfinished zero-copy send is left to it; take a new one.
    if (!grad || grad.use_count() > 1) grad = std::make_shared<std::vector<float>>(layout.total());
    CopyGradsOut(*model_, layout, grad->data());
    TraceSince(ps_.tracer, "compute", compute_start);
    if (ps_.slowdown_percent > 0) {
      // An emulated slower machine: its extra time is compute time, as the agent must see it.
      const auto sleep_start = Clock::now();
      std::this_thread::sleep_for(
          std::chrono::duration<double>(Since(t) * ps_.slowdown_percent / 100.0));
      TraceSince(ps_.tracer, "slowdown", sleep_start);
    }
    const double compute = Since(t);

    // Push this step's gradient and pull the next step's parameters in one exchange: the pull
    // goes out right behind the push instead of after its acknowledgement.
    const bool planned_last = step + 1 == total_steps;
    bool last = planned_last;
    // Only clipping servers read the norm: without clipping it is not computed (-1: none).
    const double norm = opts_.clip_norm > 0 ? MeanGradNorm(*grad, sum.trips) : -1;
    if (control_->StopRequested()) kv_->RequestStop();  // checked late: it may come mid-step
    t = Clock::now();
    PullResult next;
    if (last) {
      kv_->Push(grad, pulled.version, sum.trips, norm);
      next.push_s = Since(t);
    } else {
      next = kv_->PushPull(grad, pulled.version, sum.trips, norm, want(step + 1), params.data());
    }
    const double exchange = Since(t);
    TraceExchange(t, next);
    if (next.stop && !last) {
      // The servers say the time budget ends training with this step, for every worker alike.
      last = true;
      steps_done = step + 1;
      LOG(INFO) << "worker " << ps_.worker << ": time budget spent, stopping after step "
                << steps_done;
    }

    // Updates by other workers between the version this gradient was computed on and the one
    // pulled next (0 in sync mode).
    if (!planned_last) win_staleness += std::max<int64_t>(0, next.version - pulled.version - 1);
    win_push += next.push_s;
    win_pull += carry_pull + std::max(0.0, exchange - next.push_s - next.held_s);
    win.AddStep(sum.loss_sum, sum.trips, compute, carry_wait + next.held_s, Since(step_start));
    carry_wait = carry_pull = 0;
    pulled = next;
    if ((step + 1) % opts_.log_every == 0 || last) {
      control_->Send(MsgType::kMetrics, step + 1,
                     win.Json(ps_.worker, step + 1, stream.epoch(), Since(start), alpha)
                         .Add("push_s", win.PerStep(win_push))
                         .Add("pull_s", win.PerStep(win_pull))
                         .Add("staleness", win.PerStep(win_staleness))
                         .str());
      win = TrainWindow{};
      win_push = win_pull = win_staleness = 0;
    }
    if (last) break;
  }
  if (ps_.tracer) ps_.tracer->Flush();  // the timeline reaches the scheduler before "done"
  control_->Send(MsgType::kDone, steps_done, "");
  control_->Flush();
}

}  // namespace tteps
