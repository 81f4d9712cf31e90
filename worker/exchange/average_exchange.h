// The parameter-averaging exchange: every worker steps alone on its own slices, and every
// `average_every` steps (and after the last) the weights are replaced by their trip-weighted
// average over the workers.
#pragma once

#include <memory>

#include "worker/exchange/exchange.h"
#include "worker/exchange/local_optimizer.h"
#include "worker/exchange/worker_group.h"

namespace tteps {

class AverageExchange : public Exchange {
 public:
  AverageExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                  std::unique_ptr<WorkerGroup> group, int64_t average_every, Tracer* tracer);
  void Start(int64_t first_step) override;
  ExchangeResult Finish(int64_t step, int64_t trips, bool stop_vote, bool planned_last) override;
  bool Agreed(int64_t steps) const override { return steps % average_every_ == 0; }
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

}  // namespace tteps
