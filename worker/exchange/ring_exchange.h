// The ring-allreduce exchange: the step's gradient sum and trip count are summed over the
// workers bucket by bucket while the last micro-batch's backward still runs (as DDP's
// Reducer does), divided by the total count, and every worker takes the same optimizer step.
#pragma once

#include <memory>
#include <vector>

#include "worker/exchange/exchange.h"
#include "worker/exchange/local_optimizer.h"
#include "worker/exchange/worker_group.h"
#include "worker/grad_buckets.h"

namespace tteps {

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

}  // namespace tteps
