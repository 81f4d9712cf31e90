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
#include "worker/exchange/gradient_hooks.h"
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
  void Start(int64_t first_step) override;
  void BeforeLastBackward(int64_t step_trips, bool stop_vote) override;
  ExchangeResult Finish(int64_t step, int64_t trips, bool stop_vote, bool planned_last) override;
  void Report(TrainReport* report, int64_t steps) override;

 private:
  deeptte::DeepTTEImpl& model_;
  LocalOptimizer optimizer_;
  std::unique_ptr<WorkerGroup> group_;
  Tracer* tracer_;
  std::unique_ptr<GradientHooks> hooks_;  // each completed bucket is submitted to the ring
};

RingExchange::RingExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                           std::unique_ptr<WorkerGroup> group, double bucket_mb, Tracer* tracer)
    : model_(model), optimizer_(model, opts), group_(std::move(group)), tracer_(tracer) {
  const ParamLayout& layout = group_->layout();
  auto buckets = PlanBuckets(layout, bucket_mb * (1 << 20));
  if (!buckets.empty()) buckets[0].end += 2;  // trip count and stop votes ride with bucket 0
  hooks_ = std::make_unique<GradientHooks>(model, layout, std::move(buckets), [this](int b) {
    const Bucket& bk = hooks_->buckets()[b];
    group_->SubmitSum(group_->flat() + bk.begin, static_cast<size_t>(bk.end - bk.begin));
  });
  if (group_->worker() == 0) {
    LOG(INFO) << hooks_->buckets().size() << " gradient bucket(s) of up to " << bucket_mb << " MB";
  }
}

void RingExchange::Start(int64_t /*first_step*/) { group_->StartFromWorker0(); }

void RingExchange::BeforeLastBackward(int64_t step_trips, bool stop_vote) {
  group_->trips_slot() = static_cast<float>(step_trips);  // exact up to 2^24 trips
  group_->stop_slot() = stop_vote ? 1.0f : 0.0f;
  hooks_->Arm(group_->flat());
}

ExchangeResult RingExchange::Finish(int64_t step, int64_t /*trips*/, bool /*stop_vote*/,
                                    bool planned_last) {
  ExchangeResult res;
  auto t = Clock::now();
  hooks_->Finish();  // the tensors the last backward gave no gradient
  res.compute_s += SecondsSince(t);

  t = Clock::now();
  group_->Drain(group_->timeout_s() * (hooks_->buckets().size() + 1));
  res.wait_s += SecondsSince(t);
  TraceSince(tracer_, "wait", t);
  const float total = group_->trips_slot();
  res.stop = group_->stop_slot() > 0 && !planned_last;
  if (total <= 0) throw std::logic_error("a global batch without trips");

  t = Clock::now();
  CopyGradsIn(model_, group_->layout(), group_->flat());
  optimizer_.Step(step, total);
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
