#include "worker/step_driver.h"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/gradient_noise.h"
#include "common/slice_schedule.h"
#include "worker/batch_slicer.h"
#include "worker/deeptte/embedding_rows.h"
#include "worker/gradient_step.h"
#include "worker/slice_stream.h"
#include "worker/step_noise.h"

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
                       const TrainConfig& opts, DriverOptions o, DriverHooks hooks,
                       Exchange* exchange)
    : model_(model),
      train_(train),
      opts_(opts),
      o_(o),
      hooks_(std::move(hooks)),
      exchange_(exchange) {}

namespace {

// A step's share of the data: its micro-batches' slices, the embedding rows they use (for a
// sparse exchange), and where the stream stood after them.
struct StepData {
  std::vector<std::vector<size_t>> slices;
  TableRows rows;
  int64_t trips = 0;
  int64_t epoch = 0;        // the epoch of the last slice
  int64_t epochs_done = 0;  // epochs finished by these slices (the last one's once complete)
};

// `trips`: the training data, when the exchange wants the rows (else null).
StepData Draw(SliceStream& stream, int64_t accumulation, const data::Trips* trips) {
  StepData d;
  d.slices.resize(accumulation);
  for (auto& s : d.slices) {
    s = stream.Next();
    d.trips += static_cast<int64_t>(s.size());
  }
  if (trips) d.rows = deeptte::EmbeddingRows(*trips, d.slices);
  d.epoch = stream.epoch();
  d.epochs_done = stream.EpochsDone();
  return d;
}

// A lost worker's slice that this worker computes too: its own stream of that worker's slices
// (the data order never depends on who computes a slice), and its data for the next step.
// Its schedule says how many micro-batches each step draws (an accumulation policy may have
// changed its owner's), so that it draws what its owner would have.
struct AdoptedSlice {
  AdoptedSlice(int s, SliceStream st, SliceSchedule sc)
      : slice(s), stream(std::move(st)), schedule(std::move(sc)) {}
  int slice;
  SliceStream stream;
  SliceSchedule schedule;
  StepData next;
};

}  // namespace

void SetNoiseGeometry(const JobConfig& config, DriverOptions* o) {
  const bool measurable = config.exchange.accumulation > 1 ||
                          (config.policy.name != "fixed" && config.policy.accumulation_max > 1);
  o->noise_adam = config.optimizer.name == "adam" &&
                  config.optimizer.noise_geometry == "optimizer" && measurable;
  o->noise_adam_beta2 = config.optimizer.beta2;
  o->noise_adam_eps = config.optimizer.eps;
}

DriverResult StepDriver::Run() {
  const int64_t total_steps = TotalSteps(opts_, train_.size());
  SliceStream stream(train_, opts_, o_.num_workers, o_.worker, o_.first_worker_batch,
                     o_.balanced_slices);
  int64_t accumulation = o_.accumulation;
  // Resuming: skip the data the first start_step steps consumed (same accumulation assumed);
  // a joiner, what its slice's schedule says.
  int64_t drawn = o_.start_step * accumulation;  // micro-batches taken from the own stream
  if (o_.own_schedule) {
    accumulation = o_.own_schedule->AccumulationAt(o_.start_step);
    drawn = o_.own_schedule->PositionAt(o_.start_step);
  }
  for (int64_t i = 0; i < drawn; ++i) stream.Next();
  EvalSchedule evals(opts_.eval);
  evals.StartAt(o_.start_step, stream.EpochsDone());
  // A step's data is drawn before the previous step's exchange, which may fetch only the
  // embedding rows it uses; the accumulation a policy chose is read then.
  const auto next_accumulation = [&] {
    const int64_t chosen = hooks_.accumulation ? hooks_.accumulation() : 0;
    return chosen > 0 ? chosen : accumulation;
  };
  const bool rows = exchange_->WantsRows();
  const data::Trips* rows_from = rows ? &train_ : nullptr;
  // The own slice's data for `step`, at the accumulation chosen last; a change is reported
  // before the step's push, so that whoever computes this slice after a loss draws the same.
  // So is the start of a resumed or rolled-back run, which draws its steps anew.
  const auto draw_own = [&](int64_t step) {
    const int64_t chosen = next_accumulation();
    const bool restart = step == o_.start_step && step > 0;
    if ((chosen != accumulation || restart) && hooks_.accumulation_changed) {
      hooks_.accumulation_changed({step, drawn, chosen});
    }
    accumulation = chosen;
    drawn += accumulation;
    return Draw(stream, accumulation, rows_from);
  };

  exchange_->Prepare(o_.start_step);
  if (hooks_.ready) hooks_.ready();
  // The training clock starts with every worker; evaluations inline are taken out of it.
  const auto start = Clock::now();
  double eval_s = 0, held_s = 0;
  const auto train_seconds = [&] { return SecondsSince(start) - eval_s - held_s; };
  const auto hold = [&] {
    if (hooks_.hold) held_s += hooks_.hold();
  };
  const auto stop_vote = [&] {
    return (hooks_.stop_requested && hooks_.stop_requested()) ||
           (o_.max_train_s > 0 && train_seconds() >= o_.max_train_s);
  };
  int64_t epoch = stream.epoch();  // of the last step taken
  const auto evaluate = [&](int64_t steps, bool final) {
    const auto t = Clock::now();
    hooks_.evaluate(steps, epoch, train_seconds(), final);
    eval_s += SecondsSince(t);
  };

  // Sync after a worker loss: the slices this worker computes for lost workers.
  std::vector<std::unique_ptr<AdoptedSlice>> adopted;
  const auto adopt_new = [&](int64_t step) {
    if (!hooks_.take_adopted) return;
    const std::vector<int> fresh = hooks_.take_adopted();
    if (!fresh.empty()) exchange_->RefreshWeights();
    for (int slice : fresh) {
      if (std::any_of(adopted.begin(), adopted.end(),
                      [slice](const auto& a) { return a->slice == slice; })) {
        continue;  // computed here already
      }
      auto a = std::make_unique<AdoptedSlice>(
          slice,
          SliceStream(train_, opts_, o_.num_workers, slice, o_.first_worker_batch,
                      o_.balanced_slices),
          hooks_.schedule_of ? hooks_.schedule_of(slice) : SliceSchedule(o_.accumulation));
      for (int64_t i = 0, n = a->schedule.PositionAt(step); i < n; ++i) a->stream.Next();
      a->next = Draw(a->stream, a->schedule.AccumulationAt(step), nullptr);
      LOG(WARNING) << "worker " << o_.worker << " computes the slice of lost worker " << slice
                   << " from step " << step + 1 << " on (" << a->schedule.AccumulationAt(step)
                   << " micro-batches a step, " << a->schedule.AccumulationAt(step + 1)
                   << " from the next)";
      adopted.push_back(std::move(a));
    }
  };
  // Slices a joining worker takes over: computed here up to the step before `step`.
  const auto release = [&](int64_t step) {
    if (!hooks_.take_released) return;
    for (int slice : hooks_.take_released()) {
      adopted.erase(std::remove_if(adopted.begin(), adopted.end(),
                                   [slice](const auto& a) { return a->slice == slice; }),
                    adopted.end());
      LOG(WARNING) << "worker " << o_.worker << " leaves the slice of worker " << slice
                   << " to a joining worker from step " << step + 1 << " on";
      if (hooks_.released) hooks_.released(slice, step);
    }
  };
  // A micro-batch's gradient, added to the model's; with AdaScale measured piece by piece.
  const data::TripLength length = [this](size_t i) { return train_.length(i); };  // balanced
  const auto accumulate = [&](const std::vector<size_t>& slice, PieceNoise* pieces) {
    if (o_.noise_pieces <= 0) return AccumulateGradients(model_, train_, slice);
    if (o_.noise_pieces == 1) return AccumulateMeasured(model_, train_, slice, pieces);
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
  };
  // Its gradient for `step` on the current weights, pushed as that slice's; then its next data.
  MicroBatchStats adopted_sum;  // this step's adopted slices, counted in its report
  int64_t adopted_micro = 0;    // ... and their micro-batches
  const auto push_adopted = [&](AdoptedSlice& a, int64_t step) {
    model_.zero_grad();
    MicroBatchStats sum;
    PieceNoise pieces;
    for (const auto& slice : a.next.slices) {
      const auto s = accumulate(slice, &pieces);
      sum.loss_sum += s.loss_sum;
      sum.trips += s.trips;
    }
    CheckFinite(model_, step, sum.loss_sum, a.next.slices);
    if (o_.noise_pieces > 0) exchange_->SetPushNoise(pieces);
    exchange_->PushSlice(a.slice, step, sum.trips);
    adopted_sum.loss_sum += sum.loss_sum;
    adopted_sum.trips += sum.trips;
    adopted_micro += static_cast<int64_t>(a.next.slices.size());
    a.next = Draw(a.stream, a.schedule.AccumulationAt(step + 1), nullptr);
  };
  // The rows the next step reads: this worker's next slices' and its adopted slices'.
  const auto pull_rows = [&](const StepData& own) {
    if (adopted.empty()) return exchange_->PullRows(own.rows);
    std::vector<std::vector<size_t>> all = own.slices;
    for (const auto& a : adopted)
      all.insert(all.end(), a->next.slices.begin(), a->next.slices.end());
    exchange_->PullRows(deeptte::EmbeddingRows(train_, all));
  };

  DriverResult res;
  res.steps = total_steps;
  StepData data;
  if (o_.start_step < total_steps) data = draw_own(o_.start_step);
  if (rows && o_.start_step < total_steps) exchange_->PullRows(data.rows);
  exchange_->Start(o_.start_step);
  TrainWindow window;
  StepNoiseMeter noise_meter(o_.noise_adam, o_.noise_adam_beta2, o_.noise_adam_eps);
  for (int64_t step = o_.start_step; step < total_steps; ++step) {
    hold();  // a pause is neither compute nor a step's time (nor a slowdown's measure)
    const auto step_start = Clock::now();
    const double held_before = held_s;
    epoch = data.epoch;
    // Lost workers' slices first: they overwrite the gradients, which the own push then holds.
    adopted_sum = {};
    adopted_micro = 0;
    adopt_new(step);
    release(step);
    for (auto& a : adopted) push_adopted(*a, step);
    // Before backward: a push overlapped with it sends this step's rows.
    if (rows) exchange_->PushRows(data.rows);
    model_.zero_grad();
    MicroBatchStats sum;
    PieceNoise pieces;
    for (int64_t a = 0; a < accumulation; ++a) {
      if (a + 1 == accumulation) exchange_->BeforeLastBackward(data.trips, stop_vote());
      const auto s = accumulate(data.slices[a], &pieces);
      sum.loss_sum += s.loss_sum;
      sum.trips += s.trips;
      if (a == 0 && accumulation > 1) noise_meter.FirstMicroBatch(model_, s.trips);
    }
    CheckFinite(model_, step, sum.loss_sum, data.slices);
    if (o_.noise_pieces > 0) exchange_->SetPushNoise(pieces);
    if (const auto noise = noise_meter.EndOfStep(model_, sum.trips)) window.AddNoise(*noise);
    TraceSince(o_.tracer, "compute", step_start);
    // Weights the forward waited for are communication (the exchange reports them as such).
    const double forward_wait = exchange_->TakeForwardWaitS();
    if (o_.slowdown_percent > 0 &&
        (o_.slowdown_period_s <= 0 ||
         std::fmod(train_seconds(), o_.slowdown_period_s) < o_.slowdown_on_s)) {
      // An emulated slower machine: its extra time is compute time, as the agent must see it.
      const auto sleep_start = Clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(
          (SecondsSince(step_start) - forward_wait) * o_.slowdown_percent / 100.0));
      TraceSince(o_.tracer, "slowdown", sleep_start);
    }
    const double compute = SecondsSince(step_start) - forward_wait;

    const bool planned_last = step + 1 == total_steps;
    const int64_t step_accumulation = accumulation;
    StepData next;
    if (!planned_last) next = draw_own(step + 1);
    if (rows && !planned_last) pull_rows(next);
    ExchangeResult ex;
    try {
      ex = exchange_->Finish(step, sum.trips, stop_vote(), planned_last);
    } catch (const ExchangeInterrupted&) {
      // Given a lost worker's slice while waiting: the wait may be for that slice of this
      // step. Compute and push it on this step's weights, then wait again. Or paused: wait
      // for the resume, then for the step (a new pull: the old one's deadline has passed).
      for (bool done = false; !done;) {
        hold();
        const size_t before = adopted.size();
        adopt_new(step);
        for (size_t i = before; i < adopted.size(); ++i) push_adopted(*adopted[i], step);
        if (rows && !planned_last) pull_rows(next);
        try {
          ex = exchange_->Repull(step, planned_last);
          done = true;
        } catch (const ExchangeInterrupted&) {
        }
      }
    }
    const bool last = planned_last || ex.stop;
    if (ex.stop) {
      res.steps = step + 1;
      LOG(INFO) << "worker " << o_.worker << ": time budget spent, stopping after step "
                << res.steps;
    }
    // A lost worker's slices computed here count as this worker's trips and loss.
    sum.loss_sum += adopted_sum.loss_sum;
    sum.trips += adopted_sum.trips;
    window.AddStep(sum.loss_sum, sum.trips, compute + ex.compute_s, ex.wait_s,
                   SecondsSince(step_start) - (held_s - held_before), step_accumulation);
    res.trips += sum.trips;

    if ((step + 1) % opts_.log_every == 0 || last) {
      const int64_t steps = window.steps();
      TrainReport r = window.Take(o_.worker, step + 1, epoch, SecondsSince(start),
                                  step_accumulation, adopted_micro);
      exchange_->Report(&r, steps);
      res.last_loss = r.loss;
      if (hooks_.report) hooks_.report(r);
    }
    if (hooks_.evaluate && !last) {
      if (evals.Due(step + 1, data.epochs_done, train_seconds()) && exchange_->Agreed(step + 1)) {
        exchange_->Settle();
        evaluate(step + 1, false);
        evals.Taken(step + 1, data.epochs_done, train_seconds());
      }
    }
    if (last) break;
    data = std::move(next);
  }
  exchange_->Settle();
  res.train_seconds = train_seconds();
  res.epochs = epoch + 1;
  if (hooks_.evaluate) evaluate(res.steps, true);
  return res;
}

}  // namespace tteps
