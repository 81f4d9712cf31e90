// The ring-allreduce exchange: the step's gradient sum and trip count are summed over the
// workers bucket by bucket while the last micro-batch's backward still runs (as DDP's
// Reducer does), divided by the total count, and every worker takes the same optimizer step.
#include <glog/logging.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

#include "common/clock.h"
#include "worker/exchange/exchanges.h"
#include "worker/exchange/local_optimizer.h"
#include "worker/exchange/worker_group.h"
#include "worker/grad_buckets.h"
#include "worker/model_params.h"

namespace tteps {
namespace {

class RingExchange : public Exchange {
 public:
  // `bucket_mb`: gradient bucket size (<= 0: one bucket).
  RingExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
               std::unique_ptr<WorkerGroup> group, double bucket_mb, Tracer* tracer);
  ~RingExchange() override;
  void Start(int64_t first_step) override;
  void BeforeLastBackward(int64_t step_trips, bool stop_vote) override;
  ExchangeResult Finish(int64_t step, int64_t trips, bool stop_vote, bool planned_last) override;
  void Report(TrainReport* report, int64_t steps) override;

 private:
  void OnGradient(int entry, const at::Tensor& grad);
  // Writes entry's gradient into the flat buffer: .grad so far plus `incoming` (either may be
  // missing; zeros if both are), then submits the buckets this completes.
  void WriteGradient(int entry, const at::Tensor* incoming);

  deeptte::DeepTTEImpl& model_;
  LocalOptimizer optimizer_;
  std::unique_ptr<WorkerGroup> group_;
  Tracer* tracer_;
  std::vector<at::Tensor> params_;  // in layout order
  std::unique_ptr<BucketTracker> tracker_;
  bool armed_ = false;  // the gradient hooks act (the last micro-batch of a step)
  std::vector<unsigned> hook_handles_;
};

RingExchange::RingExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                           std::unique_ptr<WorkerGroup> group, double bucket_mb, Tracer* tracer)
    : model_(model),
      optimizer_(model, opts),
      group_(std::move(group)),
      tracer_(tracer),
      params_(model.parameters()) {
  const ParamLayout& layout = group_->layout();
  auto buckets = PlanBuckets(layout, bucket_mb * (1 << 20));
  if (!buckets.empty()) buckets[0].end += 2;  // trip count and stop votes ride with bucket 0
  tracker_ = std::make_unique<BucketTracker>(std::move(buckets),
                                             static_cast<int>(layout.entries().size()));
  if (group_->worker() == 0) {
    LOG(INFO) << tracker_->buckets().size() << " gradient bucket(s) of up to " << bucket_mb
              << " MB";
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const int entry = static_cast<int>(i);
    hook_handles_.push_back(
        params_[i].register_hook([this, entry](const at::Tensor& g) { OnGradient(entry, g); }));
  }
}

RingExchange::~RingExchange() {
  for (size_t i = 0; i < hook_handles_.size(); ++i) params_[i].remove_hook(hook_handles_[i]);
}

void RingExchange::Start(int64_t /*first_step*/) { group_->StartFromWorker0(); }

void RingExchange::WriteGradient(int entry, const at::Tensor* incoming) {
  const ParamEntry& e = group_->layout().entries()[entry];
  torch::NoGradGuard no_grad;
  auto dst = torch::from_blob(group_->flat() + e.offset, {e.numel}, torch::kFloat);
  const at::Tensor& sofar = params_[entry].grad();
  if (sofar.defined() && incoming) {
    torch::add_out(dst, sofar.reshape({-1}), incoming->reshape({-1}));
  } else if (sofar.defined() || incoming) {
    dst.copy_((incoming ? *incoming : sofar).reshape({-1}));
  } else {
    dst.zero_();
  }
  for (int b : tracker_->MarkReady(entry)) {
    const Bucket& bk = tracker_->buckets()[b];
    group_->SubmitSum(group_->flat() + bk.begin, static_cast<size_t>(bk.end - bk.begin));
  }
}

void RingExchange::OnGradient(int entry, const at::Tensor& grad) {
  // The hook sees this backward's gradient before it is added to .grad (the earlier
  // micro-batches' sum): WriteGradient adds them, as the accumulation will.
  if (armed_) WriteGradient(entry, &grad);
}

void RingExchange::BeforeLastBackward(int64_t step_trips, bool stop_vote) {
  tracker_->Reset();
  group_->trips_slot() = static_cast<float>(step_trips);  // exact up to 2^24 trips
  group_->stop_slot() = stop_vote ? 1.0f : 0.0f;
  armed_ = true;
}

ExchangeResult RingExchange::Finish(int64_t step, int64_t /*trips*/, bool /*stop_vote*/,
                                    bool planned_last) {
  ExchangeResult res;
  armed_ = false;
  auto t = Clock::now();
  // Tensors the last backward gave no gradient (an empty slice, an unused parameter).
  for (int e = 0; e < static_cast<int>(params_.size()); ++e) {
    if (!tracker_->IsReady(e)) WriteGradient(e, nullptr);
  }
  res.compute_s += SecondsSince(t);

  t = Clock::now();
  group_->Drain(group_->timeout_s() * (tracker_->buckets().size() + 1));
  res.wait_s += SecondsSince(t);
  TraceSince(tracer_, "wait", t);
  const float total = group_->trips_slot();
  res.stop = group_->stop_slot() > 0 && !planned_last;
  if (total <= 0) throw std::logic_error("a global batch without trips");

  t = Clock::now();
  CopyGradsIn(model_, group_->layout(), group_->flat());
  optimizer_.Step(total);
  res.compute_s += SecondsSince(t);
  TraceSince(tracer_, "optimizer", t);

  t = Clock::now();
  group_->MaybeCheck(step + 1, /*agreed=*/true, planned_last || res.stop);
  res.wait_s += SecondsSince(t);
  return res;
}

void RingExchange::Report(TrainReport* report, int64_t steps) { group_->Report(report, steps); }

}  // namespace

std::unique_ptr<Exchange> MakeRingExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                                           std::unique_ptr<WorkerGroup> group, double bucket_mb,
                                           Tracer* tracer) {
  return std::make_unique<RingExchange>(model, opts, std::move(group), bucket_mb, tracer);
}

}  // namespace tteps
