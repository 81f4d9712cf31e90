#include "worker/step_driver.h"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "common/clock.h"
#include "common/gradient_noise.h"
#include "common/slice_schedule.h"
#include "model/deeptte/compute_path.h"
#include "model/deeptte/embedding_rows.h"
#include "worker/batch_slicer.h"
#include "worker/gradient_step.h"
#include "worker/slice_stream.h"
#include "worker/step_noise.h"
#include "worker/step_slices.h"

namespace tteps {
namespace {

// A step whose loss or gradient is not finite ends the job here, naming the step and the trips
// (indices into this worker's training data). The parameter servers never see it (and would
// refuse it); in the ring modes the allreduce overlapped with backward may already carry it to
// the peers, whom the job's end then stops.
void CheckFinite(deeptte::DeepTTEImpl& model, int64_t step, double loss_sum,
                 const std::vector<std::vector<size_t>>& slices) {
  std::string what;
  if (!std::isfinite(loss_sum)) {
    what = "loss " + std::to_string(loss_sum);
  } else {
    const std::string param = NonFiniteGradient(model);
    if (param.empty()) return;
    what = "gradient of " + param;
  }
  std::string trips;
  size_t listed = 0, total = 0;
  for (const auto& s : slices) {
    for (size_t i : s) {
      if (listed < 8) trips += (listed++ ? ", " : "") + std::to_string(i);
      ++total;
    }
  }
  if (total > listed) trips += ", ... (" + std::to_string(total) + " trips)";
  throw std::runtime_error("non-finite " + what + " in step " + std::to_string(step + 1) +
                           ", batch of trips " + trips +
                           ": the model diverged (try a lower --lr or --clip_norm) or a trip "
                           "holds extreme values");
}

}  // namespace

StepDriver::StepDriver(deeptte::DeepTTEImpl& model, const data::Trips& train,
                       const TrainConfig& opts, DriverOptions o, StepLink* link, Exchange* exchange)
    : model_(model), train_(train), opts_(opts), o_(o), link_(link), exchange_(exchange) {}

void SetNoiseGeometry(const JobConfig& config, DriverOptions* o) {
  const bool measurable = config.exchange.accumulation > 1 ||
                          (config.policy.name != "fixed" && config.policy.accumulation_max > 1);
  o->noise_adam = config.optimizer.name == "adam" &&
                  config.optimizer.noise_geometry == "optimizer" && measurable;
  o->noise_adam_beta2 = config.optimizer.beta2;
  o->noise_adam_eps = config.optimizer.eps;
}

namespace {

// One run of the driver: the loop's state (the slices, the accumulation, the clocks, the
// window) and the parts of a step as methods.
class StepRun {
 public:
  StepRun(deeptte::DeepTTEImpl& model, const data::Trips& train, const TrainConfig& opts,
          const DriverOptions& o, StepLink& link, Exchange* exchange)
      : model_(model),
        train_(train),
        opts_(opts),
        o_(o),
        link_(link),
        exchange_(exchange),
        slices_(train, opts, {o.num_workers, o.first_worker_batch, o.balanced_slices}, o.worker),
        accumulation_(o.accumulation),
        rows_(exchange->wants_rows()),
        noise_meter_(o.noise_adam, o.noise_adam_beta2, o.noise_adam_eps) {}

  DriverResult Go();

 private:
  void SkipDone(EvalSchedule* evals);
  StepData DrawOwn(int64_t step);
  double TrainSeconds() const { return SecondsSince(time_.start) - time_.eval_s - time_.held_s; }
  // The scheduler's commands into the run's state.
  void Drain();
  // Drains, and waits while paused.
  void Hold();
  bool StopVote() const {
    return commanded_.stop || link_.StopRequested() ||
           (o_.max_train_s > 0 && TrainSeconds() >= o_.max_train_s);
  }
  void Evaluate(int64_t steps, bool final);
  void AdoptNew(int64_t step);
  void Release(int64_t step);
  MicroBatchStats Accumulate(const std::vector<size_t>& slice, PieceNoise* pieces);
  void PushAdopted(AdoptedSlice& a, int64_t step);
  // The rows the next step reads: this worker's next slices' and its adopted slices'.
  TableRows NextRows(const StepData& own) const;
  // This worker's own slice of `step`: its micro-batches' gradients in the model.
  MicroBatchStats ComputeOwn(int64_t step, const StepData& data);
  // An emulated slower machine (--slowdown_percent): its extra time is compute time.
  void SlowDown(Clock::time_point step_start, double forward_wait);
  // The exchange's part of `step`; `next` is the next step's data (its rows are pulled). A
  // change of this worker's slices while the exchange waited is taken, and the step finished
  // again.
  ExchangeResult Finish(int64_t step, int64_t trips, bool planned_last, const StepData& next);
  void Report(int64_t step, bool last, int64_t step_accumulation);
  // The computing part of `step` (the adopted slices pushed, the own slice's gradients in the
  // model); `compute_s`: its time, weights waited for left out.
  MicroBatchStats Compute(int64_t step, const StepData& data, double* compute_s);
  // One step; `data` becomes the next step's. Returns whether it was the last.
  bool TakeStep(int64_t step, int64_t total_steps, StepData* data, EvalSchedule* evals);

  deeptte::DeepTTEImpl& model_;
  const data::Trips& train_;
  const TrainConfig& opts_;
  const DriverOptions& o_;
  StepLink& link_;
  Exchange* exchange_;
  StepSlices slices_;
  int64_t accumulation_;
  int64_t drawn_ = 0;  // micro-batches taken from the own stream
  bool rows_;
  // The run's start, and the time since spent evaluating and held by the scheduler.
  struct Times {
    Clock::time_point start;
    double eval_s = 0, held_s = 0;
  } time_;
  int64_t epoch_ = 0;  // of the last step taken
  // What the scheduler's commands said: stop, pause, the policy's accumulation (0: none yet),
  // slices to adopt (at once) and to release (at the next step).
  struct Commanded {
    bool stop = false, paused = false;
    int64_t accumulation = 0;
    std::vector<StepCommand> adopts;
    std::vector<int> releases;
  } commanded_;
  // This step's parts besides the own slice's gradients.
  struct StepParts {
    PieceNoise own_pieces;      // AdaScale: the own slice's pieces
    MicroBatchStats adopted;    // the adopted slices, counted in its report
    int64_t adopted_micro = 0;  // ... and their micro-batches
  } step_;
  TrainWindow window_;
  StepNoiseMeter noise_meter_;
  DriverResult res_;
};

void StepRun::SkipDone(EvalSchedule* evals) {
  // Resuming: skip the data the first start_step steps consumed (same accumulation assumed);
  // a joiner, what its slice's schedule says.
  drawn_ = o_.start_step * accumulation_;
  if (o_.own_schedule) {
    accumulation_ = o_.own_schedule->AccumulationAt(o_.start_step);
    drawn_ = o_.own_schedule->PositionAt(o_.start_step);
  }
  for (int64_t i = 0; i < drawn_; ++i) slices_.own().Next();
  evals->StartAt(o_.start_step, slices_.own().EpochsDone());
}

StepData StepRun::DrawOwn(int64_t step) {
  // A step's data is drawn before the previous step's exchange, which may fetch only the
  // embedding rows it uses; the accumulation a policy chose is read then. A change is reported
  // before the step's push, so that whoever computes this slice after a loss draws the same.
  // So is the start of a resumed or rolled-back run, which draws its steps anew.
  const int64_t chosen = commanded_.accumulation > 0 ? commanded_.accumulation : accumulation_;
  const bool restart = step == o_.start_step && step > 0;
  if (chosen != accumulation_ || restart) link_.AccumulationChanged({step, drawn_, chosen});
  accumulation_ = chosen;
  drawn_ += accumulation_;
  return Draw(slices_.own(), accumulation_, rows_ ? &train_ : nullptr);
}

void StepRun::Evaluate(int64_t steps, bool final) {
  const auto t = Clock::now();
  link_.Evaluate(steps, epoch_, TrainSeconds(), final);
  time_.eval_s += SecondsSince(t);
}

void StepRun::Drain() {
  for (StepCommand& c : link_.TakeCommands()) {
    switch (c.kind) {
      case StepCommand::kStop:
        commanded_.stop = true;
        break;
      case StepCommand::kPause:
        commanded_.paused = true;
        break;
      case StepCommand::kResume:
        commanded_.paused = false;
        break;
      case StepCommand::kSetAccumulation:
        commanded_.accumulation = c.accumulation;
        break;
      case StepCommand::kAdopt:
        commanded_.adopts.push_back(std::move(c));
        break;
      case StepCommand::kRelease:
        commanded_.releases.push_back(c.slice);
        break;
    }
  }
}

void StepRun::Hold() {
  Drain();
  if (!commanded_.paused) return;
  const auto t = Clock::now();
  LOG(WARNING) << "worker " << o_.worker << " waits for workers to join (--min_workers)";
  // A rollback ends the wait too (the exchange then gives up the step).
  while (commanded_.paused && link_.AwaitCommand()) Drain();
  time_.held_s += SecondsSince(t);
  LOG(WARNING) << "worker " << o_.worker << " trains on after " << SecondsSince(t) << " s of pause";
}

void StepRun::AdoptNew(int64_t step) {
  if (commanded_.adopts.empty()) return;
  exchange_->Settle(Weights::kExact);
  for (StepCommand& c : std::exchange(commanded_.adopts, {})) {
    SliceSchedule schedule = c.schedule ? *c.schedule : SliceSchedule(o_.accumulation);
    const int64_t now = schedule.AccumulationAt(step), then = schedule.AccumulationAt(step + 1);
    if (!slices_.Adopt(c.slice, step, std::move(schedule))) continue;  // computed here already
    if (step == o_.start_step) {  // one of --slices past the workers
      LOG(INFO) << "worker " << o_.worker << " computes slice " << c.slice << " as well";
      continue;
    }
    LOG(WARNING) << "worker " << o_.worker << " computes the slice of lost worker " << c.slice
                 << " from step " << step + 1 << " on (" << now << " micro-batches a step, " << then
                 << " from the next)";
  }
}

void StepRun::Release(int64_t step) {
  // Slices a joining worker takes over: computed here up to the step before `step`.
  for (int slice : std::exchange(commanded_.releases, {})) {
    slices_.Release(slice);
    LOG(WARNING) << "worker " << o_.worker << " leaves the slice of worker " << slice
                 << " to a joining worker from step " << step + 1 << " on";
    link_.Released(slice, step);
  }
}

MicroBatchStats StepRun::Accumulate(const std::vector<size_t>& slice, PieceNoise* pieces) {
  // A micro-batch's gradient, added to the model's; with AdaScale measured piece by piece.
  if (o_.noise_pieces <= 0) return AccumulateGradients(model_, train_, slice);
  if (o_.noise_pieces == 1) return AccumulateMeasured(model_, train_, slice, pieces);
  const data::TripLength length = [this](size_t i) { return train_.length(i); };  // balanced
  MicroBatchStats sum;
  for (int p = 0; p < o_.noise_pieces; ++p) {
    const auto piece =
        SliceFor(slice, static_cast<int>(o_.noise_pieces), p, o_.pieces_first_worker_batch,
                 o_.pieces_balanced ? length : data::TripLength());
    if (piece.empty()) continue;
    const auto s = AccumulateMeasured(model_, train_, piece, pieces);
    sum.loss_sum += s.loss_sum;
    sum.trips += s.trips;
  }
  return sum;
}

void StepRun::PushAdopted(AdoptedSlice& a, int64_t step) {
  // Its gradient for `step` on the current weights, pushed as that slice's; then its next data.
  model_.zero_grad(/*set_to_none=*/true);  // as LibTorch 2 does: no fill, no add to zeros
  MicroBatchStats sum;
  PieceNoise pieces;
  for (const auto& slice : a.next.slices) {
    const auto s = Accumulate(slice, &pieces);
    sum.loss_sum += s.loss_sum;
    sum.trips += s.trips;
  }
  CheckFinite(model_, step, sum.loss_sum, a.next.slices);
  exchange_->PushSlice({a.slice, step, sum.trips, pieces});
  step_.adopted.loss_sum += sum.loss_sum;
  step_.adopted.trips += sum.trips;
  step_.adopted_micro += static_cast<int64_t>(a.next.slices.size());
  slices_.DrawNext(a, step + 1);
}

TableRows StepRun::NextRows(const StepData& own) const {
  if (slices_.adopted().empty()) return own.rows;
  return deeptte::EmbeddingRows(train_, slices_.NextMicroBatches(own));
}

MicroBatchStats StepRun::ComputeOwn(int64_t step, const StepData& data) {
  model_.zero_grad(/*set_to_none=*/true);  // as LibTorch 2 does: no fill, no add to zeros
  MicroBatchStats sum;
  step_.own_pieces = {};
  for (int64_t a = 0; a < accumulation_; ++a) {
    // Before the last backward: a push overlapped with it sends this step's rows.
    if (a + 1 == accumulation_) {
      exchange_->BeginStep({data.trips, StopVote(), rows_ ? &data.rows : nullptr});
    }
    const auto s = Accumulate(data.slices[a], &step_.own_pieces);
    sum.loss_sum += s.loss_sum;
    sum.trips += s.trips;
    if (a == 0 && accumulation_ > 1) noise_meter_.FirstMicroBatch(model_, s.trips);
  }
  CheckFinite(model_, step, sum.loss_sum, data.slices);
  if (const auto noise = noise_meter_.EndOfStep(model_, sum.trips)) window_.AddNoise(*noise);
  return sum;
}

void StepRun::SlowDown(Clock::time_point step_start, double forward_wait) {
  if (o_.slowdown_percent <= 0 ||
      (o_.slowdown_period_s > 0 &&
       std::fmod(TrainSeconds(), o_.slowdown_period_s) >= o_.slowdown_on_s)) {
    return;
  }
  const auto sleep_start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(
      (SecondsSince(step_start) - forward_wait) * o_.slowdown_percent / 100.0));
  TraceSince(o_.tracer, "slowdown", sleep_start);
}

ExchangeResult StepRun::Finish(int64_t step, int64_t trips, bool planned_last,
                               const StepData& next) {
  StepEnd end{step, trips, StopVote(), planned_last, step_.own_pieces, nullptr, false};
  TableRows next_rows;
  if (rows_ && !planned_last) {
    next_rows = NextRows(next);
    end.next_rows = &next_rows;
  }
  for (;;) {
    const ExchangeResult ex = exchange_->Finish(end);
    if (!ex.view_changed) return ex;
    // Given a lost worker's slice while waiting: the wait may be for that slice of this step.
    // Compute and push it on this step's weights, then wait again. Or paused: wait for the
    // resume, then for the step (a new pull: the old one's deadline has passed).
    Hold();
    const size_t before = slices_.adopted().size();
    AdoptNew(step);
    for (size_t i = before; i < slices_.adopted().size(); ++i) {
      PushAdopted(*slices_.adopted()[i], step);
    }
    if (rows_ && !planned_last) next_rows = NextRows(next);
    end.again = true;
    end.stop_vote = StopVote();
  }
}

void StepRun::Report(int64_t step, bool last, int64_t step_accumulation) {
  if ((step + 1) % opts_.log_every != 0 && !last) return;
  const int64_t steps = window_.steps();
  TrainReport r = window_.Take(o_.worker, step + 1, epoch_, SecondsSince(time_.start),
                               step_accumulation, step_.adopted_micro);
  r.cpu_gemm = deeptte::GemmName();
  r.blas = deeptte::BlasName();
  exchange_->Report(&r, steps);
  res_.last_loss = r.loss;
  link_.Report(r);
}

MicroBatchStats StepRun::Compute(int64_t step, const StepData& data, double* compute_s) {
  const auto step_start = Clock::now();
  struct Computing {  // said on the heartbeat until the step's computation ends, however
    Computing(StepLink& link, int64_t step) : link(link) { link.Computing(step); }
    ~Computing() { link.Computing(-1); }
    StepLink& link;
  } computing(link_, step);
  // Lost workers' slices first: they overwrite the gradients, which the own push then holds.
  step_.adopted = {};
  step_.adopted_micro = 0;
  AdoptNew(step);
  Release(step);
  for (const auto& a : slices_.adopted()) PushAdopted(*a, step);
  const MicroBatchStats sum = ComputeOwn(step, data);
  TraceSince(o_.tracer, "compute", step_start);
  // Weights the forward waited for are communication (the exchange reports them as such).
  const double forward_wait = exchange_->TakeForwardWaitS();
  SlowDown(step_start, forward_wait);
  *compute_s = SecondsSince(step_start) - forward_wait;
  return sum;
}

bool StepRun::TakeStep(int64_t step, int64_t total_steps, StepData* data, EvalSchedule* evals) {
  Hold();  // a pause is neither compute nor a step's time (nor a slowdown's measure)
  const auto step_start = Clock::now();
  const double held_before = time_.held_s;
  epoch_ = data->epoch;
  double compute = 0;
  MicroBatchStats sum = Compute(step, *data, &compute);
  const bool planned_last = step + 1 == total_steps;
  const int64_t step_accumulation = accumulation_;
  StepData next;
  if (!planned_last) next = DrawOwn(step + 1);
  const ExchangeResult ex = Finish(step, sum.trips, planned_last, next);
  const bool last = planned_last || ex.stop;
  if (ex.stop) {
    res_.steps = step + 1;
    LOG(INFO) << "worker " << o_.worker << ": time budget spent, stopping after step "
              << res_.steps;
  }
  // A lost worker's slices computed here count as this worker's trips and loss.
  sum.loss_sum += step_.adopted.loss_sum;
  sum.trips += step_.adopted.trips;
  window_.AddStep(sum.loss_sum, sum.trips, compute + ex.compute_s, ex.wait_s,
                  SecondsSince(step_start) - (time_.held_s - held_before), step_accumulation);
  res_.trips += sum.trips;
  Report(step, last, step_accumulation);
  if (!last && link_.LeaveRequested()) {
    res_.steps = step + 1;
    res_.left = true;
    return true;
  }
  if (link_.Evaluates() && !last && evals->Due(step + 1, data->epochs_done, TrainSeconds()) &&
      exchange_->Agreed(step + 1)) {
    exchange_->Settle(Weights::kFetched);
    Evaluate(step + 1, false);
    evals->Taken(step + 1, data->epochs_done, TrainSeconds());
  }
  if (!last) *data = std::move(next);
  return last;
}

DriverResult StepRun::Go() {
  const int64_t total_steps = TotalSteps(opts_, train_.size());
  EvalSchedule evals(opts_.eval);
  SkipDone(&evals);
  link_.Ready();
  // The training clock starts with every worker; evaluations inline are taken out of it.
  time_.start = Clock::now();
  epoch_ = slices_.own().epoch();
  res_.steps = total_steps;
  StepData data;
  if (o_.start_step < total_steps) data = DrawOwn(o_.start_step);
  exchange_->Start(o_.start_step, rows_ && o_.start_step < total_steps ? &data.rows : nullptr);
  for (int64_t step = o_.start_step; step < total_steps; ++step) {
    if (TakeStep(step, total_steps, &data, &evals)) break;
  }
  exchange_->Settle(Weights::kFetched);
  res_.train_seconds = TrainSeconds();
  res_.epochs = epoch_ + 1;
  if (link_.Evaluates() && !res_.left) Evaluate(res_.steps, true);
  return res_;
}

}  // namespace

DriverResult StepDriver::Run() {
  StepLink alone;  // a loop without a link asks nothing of anyone
  StepRun run(model_, train_, opts_, o_, link_ ? *link_ : alone, exchange_);
  return run.Go();
}

}  // namespace tteps
