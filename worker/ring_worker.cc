#include "worker/ring_worker.h"

#include <glog/logging.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "common/json_writer.h"
#include "worker/collectives/consistency.h"
#include "worker/gradient_step.h"
#include "worker/model_params.h"
#include "worker/train_window.h"

namespace tteps {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string Hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

}  // namespace

RingWorker::RingWorker(deeptte::DeepTTE model, const std::vector<data::Trip>& train,
                       const TrainOptions& opts, const RingWorkerOptions& ro,
                       collectives::Allreduce* allreduce, ControlChannel* control)
    : model_(std::move(model)),
      train_(train),
      opts_(opts),
      ro_(ro),
      allreduce_(allreduce),
      control_(control),
      layout_(LayoutOf(*model_)),
      params_(model_->parameters()) {
  ro_.ring.Validate();
  flat_.resize(layout_.total() + 2);
  auto buckets = PlanBuckets(layout_, ro_.ring.bucket_mb * (1 << 20));
  if (!buckets.empty()) buckets[0].end += 2;  // trip count and stop votes ride with bucket 0
  tracker_ = std::make_unique<BucketTracker>(std::move(buckets),
                                             static_cast<int>(layout_.entries().size()));
  comm_ = std::make_unique<collectives::CommThread>();
  if (ro_.ring.mode == "ring" && ro_.worker == 0) {
    LOG(INFO) << tracker_->buckets().size() << " gradient bucket(s) of up to " << ro_.ring.bucket_mb
              << " MB, allreduce " << allreduce_->name();
  }
  allreduce_->set_abort_check([this] { return stopping_.load() || control_->ShutdownRequested(); });
  if (ro_.ring.mode == "ring") {
    for (size_t i = 0; i < params_.size(); ++i) {
      const int entry = static_cast<int>(i);
      hook_handles_.push_back(
          params_[i].register_hook([this, entry](const at::Tensor& g) { OnGradient(entry, g); }));
    }
  }
}

RingWorker::~RingWorker() {
  // A collective still running (after a failure) gives up at once instead of at its deadline.
  stopping_ = true;
  comm_.reset();
  allreduce_->set_abort_check(nullptr);
  for (size_t i = 0; i < hook_handles_.size(); ++i) params_[i].remove_hook(hook_handles_[i]);
}

std::string RingWorker::PeerName(int peer) const {
  if (peer >= 0 && peer < static_cast<int>(ro_.worker_names.size())) {
    return ro_.worker_names[peer];
  }
  return "worker " + std::to_string(peer);
}

void RingWorker::Run() {
  int64_t steps = 0;
  try {
    steps = RunSteps();
  } catch (const collectives::CollectiveTimeout& e) {
    throw std::runtime_error(
        std::string(e.what()) +
        (e.peer() >= 0 ? "; rank " + std::to_string(e.peer()) + " is " + PeerName(e.peer()) : ""));
  }
  control_->Send(MsgType::kDone, steps, "");
  control_->Flush();
}

void RingWorker::SubmitSum(float* data, size_t n) {
  comm_->Submit([this, data, n] {
    ScopedSpan span(ro_.tracer, "allreduce", kCommRow);
    allreduce_->Sum(data, n, ro_.timeout_s);
  });
}

void RingWorker::SumNow(float* data, size_t n) {
  SubmitSum(data, n);
  comm_->Drain(ro_.timeout_s + 5);
}

void RingWorker::SubmitBuckets(const std::vector<int>& buckets) {
  for (int b : buckets) {
    const Bucket& bk = tracker_->buckets()[b];
    SubmitSum(flat_.data() + bk.begin, static_cast<size_t>(bk.end - bk.begin));
  }
}

void RingWorker::WriteGradient(int entry, const at::Tensor* incoming) {
  const ParamEntry& e = layout_.entries()[entry];
  torch::NoGradGuard no_grad;
  auto dst = torch::from_blob(flat_.data() + e.offset, {e.numel}, torch::kFloat);
  const at::Tensor& sofar = params_[entry].grad();
  if (sofar.defined() && incoming) {
    torch::add_out(dst, sofar.reshape({-1}), incoming->reshape({-1}));
  } else if (sofar.defined() || incoming) {
    dst.copy_((incoming ? *incoming : sofar).reshape({-1}));
  } else {
    dst.zero_();
  }
  SubmitBuckets(tracker_->MarkReady(entry));
}

void RingWorker::OnGradient(int entry, const at::Tensor& grad) {
  // The hook sees this backward's gradient before it is added to .grad (the earlier
  // micro-batches' sum): WriteGradient adds them, as the accumulation will.
  if (armed_) WriteGradient(entry, &grad);
}

RingWorker::StepResult RingWorker::ComputeGradients(SliceStream& stream, int64_t alpha,
                                                    bool reduce) {
  model_->zero_grad();
  std::vector<std::vector<size_t>> slices(alpha);
  int64_t trips = 0;
  for (auto& s : slices) {
    s = stream.Next();
    trips += static_cast<int64_t>(s.size());
  }
  if (reduce) {
    tracker_->Reset();
    flat_[trips_slot()] = static_cast<float>(trips);  // exact up to 2^24 trips
    flat_[stop_slot()] = StopVote();
  }
  StepResult r;
  for (int64_t a = 0; a < alpha; ++a) {
    armed_ = reduce && a + 1 == alpha;
    auto s = AccumulateGradients(*model_, train_, slices[a]);
    r.loss_sum += s.loss_sum;
    r.trips += s.trips;
  }
  armed_ = false;
  if (reduce) {
    // Tensors the last backward gave no gradient (an empty slice, an unused parameter).
    for (int e = 0; e < static_cast<int>(params_.size()); ++e) {
      if (!tracker_->IsReady(e)) WriteGradient(e, nullptr);
    }
  }
  return r;
}

bool RingWorker::AverageParameters(int64_t trips) {
  const int64_t n = layout_.total();
  CopyParamsOut(*model_, layout_, flat_.data());
  const float weight = static_cast<float>(trips);
  for (int64_t i = 0; i < n; ++i) flat_[i] *= weight;
  flat_[trips_slot()] = weight;
  flat_[stop_slot()] = StopVote();
  SumNow(flat_.data(), flat_.size());
  const bool stop = flat_[stop_slot()] > 0;
  const float total = flat_[trips_slot()];
  if (total <= 0) return stop;  // nobody trained since the last average: nothing changed
  for (int64_t i = 0; i < n; ++i) flat_[i] /= total;
  CopyParamsIn(*model_, layout_, flat_.data());
  return stop;
}

void RingWorker::CheckIdentical(int64_t step) {
  CopyParamsOut(*model_, layout_, flat_.data());
  const uint64_t mine = collectives::BitHash(flat_.data(), layout_.total());
  std::vector<uint64_t> hashes;
  comm_->Submit([&] {
    hashes =
        collectives::GatherHashes(*allreduce_, ro_.worker, ro_.num_workers, mine, ro_.timeout_s);
  });
  comm_->Drain(ro_.timeout_s + 5);
  const auto bad = collectives::Disagreeing(hashes);
  if (bad.empty()) {
    VLOG(ro_.worker == 0 ? 0 : 1) << "step " << step << ": parameters bitwise identical on all "
                                  << ro_.num_workers << " workers (hash " << Hex(mine) << ")";
    return;
  }
  std::string who;
  for (int w : bad) who += (who.empty() ? "" : ", ") + PeerName(w) + " (" + Hex(hashes[w]) + ")";
  throw std::runtime_error("the workers' parameters differ after step " + std::to_string(step) +
                           ": " + who + " disagree with worker 0 (" + Hex(hashes[0]) + ")");
}

void RingWorker::SendSnapshot(int64_t step, bool final) {
  auto snap = std::make_shared<std::vector<float>>(layout_.total());
  CopyParamsOut(*model_, layout_, snap->data());
  Payload p;
  p.data = snap->data();
  p.count = snap->size();
  p.owner = std::move(snap);
  control_->SendWithPayloads(MsgType::kSnapshot, step, final ? 1 : 0, {p});
}

int64_t RingWorker::RunSteps() {
  const bool ring = ro_.ring.mode == "ring";
  const int64_t k = ring ? 1 : ro_.ring.average_every;  // steps between consensus points
  const int64_t total_steps = TotalSteps(opts_, train_.size());
  SliceStream stream(train_, opts_, ro_.num_workers, ro_.worker, ro_.first_worker_batch);
  auto optimizer = MakeOptimizer(opts_, model_->parameters());
  int64_t alpha = ro_.accumulation;

  // Every worker begins together, once all have loaded their data (the training clock's start).
  control_->Send(MsgType::kMetrics, 0, TrainStartJson(ro_.worker));
  control_->WaitForGo();
  // Start from worker 0's parameters, as DDP does (the others contribute zeros).
  CopyParamsOut(*model_, layout_, flat_.data());
  if (ro_.worker != 0) std::fill(flat_.begin(), flat_.end(), 0.0f);
  SumNow(flat_.data(), layout_.total());
  CopyParamsIn(*model_, layout_, flat_.data());

  TrainWindow win;
  int64_t trips_since_average = 0, epochs_evaluated = 0;
  bool eval_due = false, check_due = false;
  const auto start = Clock::now();
  auto last_snapshot = start;
  int64_t steps_done = total_steps;
  for (int64_t step = 0; step < total_steps; ++step) {
    const auto step_start = Clock::now();
    if (control_->alpha() > 0) alpha = control_->alpha();
    // Worker 0 snapshots the parameters for evaluation: after every epoch, every eval_every
    // steps or every eval_every_s seconds, at the first point where the workers agree (every
    // step in ring mode).
    if (ro_.worker == 0 && step > 0) {
      const int64_t finished = stream.AtEpochEnd() ? stream.epoch() + 1 : stream.epoch();
      if (opts_.eval_every_s > 0) {
        eval_due = eval_due || Since(last_snapshot) >= opts_.eval_every_s;
      } else if (opts_.eval_every > 0 ? step % opts_.eval_every == 0
                                      : finished > epochs_evaluated) {
        eval_due = true;
        epochs_evaluated = std::max(epochs_evaluated, finished);
      }
      if (eval_due && step % k == 0) {
        SendSnapshot(step, false);
        eval_due = false;
        last_snapshot = Clock::now();
      }
    }

    auto t = Clock::now();
    const StepResult r = ComputeGradients(stream, alpha, ring);
    TraceSince(ro_.tracer, "compute", t);
    bool stop = false;
    if (ro_.slowdown_percent > 0) {
      // An emulated slower machine: its extra time is compute time, as the agent must see it.
      const auto sleep_start = Clock::now();
      std::this_thread::sleep_for(
          std::chrono::duration<double>(Since(t) * ro_.slowdown_percent / 100.0));
      TraceSince(ro_.tracer, "slowdown", sleep_start);
    }
    double compute = Since(t), wait = 0;
    if (ring) {
      t = Clock::now();
      comm_->Drain(ro_.timeout_s * (tracker_->buckets().size() + 1));
      wait += Since(t);
      TraceSince(ro_.tracer, "wait", t);
      const float total = flat_[trips_slot()];
      stop = flat_[stop_slot()] > 0;
      if (total <= 0) throw std::logic_error("a global batch without trips");
      CopyGradsIn(*model_, layout_, flat_.data());
      ScaleGradients(*model_, 1.0 / total);
    } else if (r.trips > 0) {
      ScaleGradients(*model_, 1.0 / r.trips);
    }
    t = Clock::now();
    if (ring || r.trips > 0) {
      if (opts_.clip_norm > 0) {
        torch::nn::utils::clip_grad_norm_(model_->parameters(), opts_.clip_norm);
      }
      optimizer->step();
    }
    compute += Since(t);
    TraceSince(ro_.tracer, "optimizer", t);

    bool last = step + 1 == total_steps;
    trips_since_average += r.trips;
    t = Clock::now();
    if (!ring && ((step + 1) % k == 0 || last)) {
      ScopedSpan span(ro_.tracer, "average");
      stop = AverageParameters(trips_since_average);
      trips_since_average = 0;
    }
    if (stop && !last) {
      // Every worker read the same votes from the same sum: all stop after this step.
      last = true;
      steps_done = step + 1;
      if (ro_.worker == 0) LOG(INFO) << "time budget spent: stopping after step " << steps_done;
    }
    if ((step + 1) % ro_.ring.check_every == 0) check_due = true;
    if ((check_due && (step + 1) % k == 0) || last) {
      ScopedSpan span(ro_.tracer, "check");
      CheckIdentical(step + 1);
      check_due = false;
    }
    wait += Since(t);

    win.AddStep(r.loss_sum, r.trips, compute, wait, Since(step_start));
    if ((step + 1) % opts_.log_every == 0 || last) {
      const double comm = comm_->TakeBusySeconds();
      control_->Send(MsgType::kMetrics, step + 1,
                     win.Json(ro_.worker, step + 1, stream.epoch(), Since(start), alpha)
                         .Add("allreduce_s", win.PerStep(comm))
                         .str());
      win = TrainWindow{};
    }
    if (last) break;
  }
  if (ro_.worker == 0) SendSnapshot(steps_done, true);
  if (ro_.tracer) ro_.tracer->Flush();  // the timeline reaches the scheduler before "done"
  return steps_done;
}

}  // namespace tteps
