// The parameter-averaging exchange: every worker steps alone on its own slices, and every
// `average_every` steps (and after the last) the weights are replaced by their trip-weighted
// average over the workers.
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/clock.h"
#include "model/model_params.h"
#include "worker/exchange/exchanges.h"
#include "worker/exchange/local_optimizer.h"
#include "worker/exchange/worker_group.h"

namespace tteps {
namespace {

class AverageExchange : public Exchange {
 public:
  AverageExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                  std::unique_ptr<WorkerGroup> group, int64_t average_every, Tracer* tracer);
  void Start(int64_t first_step, const TableRows* rows) override;
  ExchangeResult Finish(const StepEnd& e) override;
  void PushSlice(const SlicePush& p) override {
    throw std::logic_error("parameter averaging cannot take over a lost worker's slice (slice " +
                           std::to_string(p.slice) + ")");
  }
  void Report(TrainReport* report, int64_t steps) override;

 private:
  // Replaces the weights by their average over the workers, weighted by the trips each trained
  // on since the last average. Returns whether any worker voted to stop.
  bool Average(bool stop_vote);

  deeptte::DeepTTEImpl& model_;
  LocalOptimizer optimizer_;
  std::unique_ptr<WorkerGroup> group_;
  int64_t average_every_;
  Tracer* tracer_;
  int64_t trips_since_average_ = 0;
};

AverageExchange::AverageExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                                 std::unique_ptr<WorkerGroup> group, int64_t average_every,
                                 Tracer* tracer)
    : model_(model),
      optimizer_(model, opts),
      group_(std::move(group)),
      average_every_(average_every),
      tracer_(tracer) {
  agree_every_ = average_every;
}

void AverageExchange::Start(int64_t /*first_step*/, const TableRows* /*rows*/) {
  group_->StartFromWorker0();
}

bool AverageExchange::Average(bool stop_vote) {
  ScopedSpan span(tracer_, "average");
  const int64_t n = group_->layout().total();
  float* flat = group_->flat();
  CopyParamsOut(model_, group_->layout(), flat);
  const float weight = static_cast<float>(trips_since_average_);
  for (int64_t i = 0; i < n; ++i) flat[i] *= weight;
  group_->trips_slot() = weight;
  group_->stop_slot() = stop_vote ? 1.0f : 0.0f;
  group_->SumNow(flat, n + 2);
  trips_since_average_ = 0;
  const bool stop = group_->stop_slot() > 0;
  const float total = group_->trips_slot();
  if (total <= 0) return stop;  // nobody trained since the last average: nothing changed
  for (int64_t i = 0; i < n; ++i) flat[i] /= total;
  CopyParamsIn(model_, group_->layout(), flat);
  return stop;
}

ExchangeResult AverageExchange::Finish(const StepEnd& e) {
  const int64_t step = e.step, trips = e.trips;
  const bool planned_last = e.planned_last;
  ExchangeResult res;
  auto t = Clock::now();
  if (trips > 0) optimizer_.Step(step, trips);
  res.compute_s = SecondsSince(t);
  TraceSince(tracer_, "optimizer", t);

  t = Clock::now();
  trips_since_average_ += trips;
  const bool average = (step + 1) % average_every_ == 0 || planned_last;
  if (average) res.stop = Average(e.stop_vote) && !planned_last;
  group_->MaybeCheck(step + 1, average, planned_last || res.stop);
  res.wait_s = SecondsSince(t);
  return res;
}

void AverageExchange::Report(TrainReport* report, int64_t steps) { group_->Report(report, steps); }

}  // namespace

std::unique_ptr<Exchange> MakeAverageExchange(deeptte::DeepTTEImpl& model,
                                              const OptimizerConfig& opts,
                                              std::unique_ptr<WorkerGroup> group,
                                              int64_t average_every, Tracer* tracer) {
  return std::make_unique<AverageExchange>(model, opts, std::move(group), average_every, tracer);
}

}  // namespace tteps
