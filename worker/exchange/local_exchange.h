// The local exchange: nothing to combine. The step's gradient is this process's, and the
// optimizer steps at once. `local` mode, the reference that every distributed mode must match.
#pragma once

#include "common/trace.h"
#include "worker/exchange/exchange.h"
#include "worker/exchange/local_optimizer.h"

namespace tteps {

class LocalExchange : public Exchange {
 public:
  LocalExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts, Tracer* tracer)
      : optimizer_(model, opts), tracer_(tracer) {}
  void Start(int64_t /*first_step*/) override {}
  ExchangeResult Finish(int64_t step, int64_t trips, bool stop_vote, bool planned_last) override;

 private:
  LocalOptimizer optimizer_;
  Tracer* tracer_;
};

}  // namespace tteps
