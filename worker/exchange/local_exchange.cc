// The local exchange: nothing to combine. The step's gradient is this process's, and the
// optimizer steps at once. `local` mode, the reference that every distributed mode must match.

#include "common/trace.h"
#include "worker/exchange/exchanges.h"
#include "worker/exchange/local_optimizer.h"

namespace tteps {
namespace {

class LocalExchange : public Exchange {
 public:
  LocalExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts, Tracer* tracer,
                std::unique_ptr<AdaScale> adascale)
      : optimizer_(model, opts, std::move(adascale)), tracer_(tracer) {}
  void Start(int64_t /*first_step*/) override {}
  void SetPushNoise(const PieceNoise& pieces) override { pieces_ = pieces; }
  ExchangeResult Finish(int64_t step, int64_t trips, bool stop_vote, bool planned_last) override;

 private:
  LocalOptimizer optimizer_;
  Tracer* tracer_;
  PieceNoise pieces_;  // of the step being finished
};

ExchangeResult LocalExchange::Finish(int64_t step, int64_t trips, bool stop_vote,
                                     bool /*planned_last*/) {
  const auto t = Tracer::Clock::now();
  if (trips > 0) optimizer_.Step(step, trips, pieces_);
  pieces_ = {};
  TraceSince(tracer_, "optimizer", t);
  ExchangeResult r;
  r.stop = stop_vote;  // one worker agrees with itself
  r.compute_s = std::chrono::duration<double>(Tracer::Clock::now() - t).count();
  return r;
}

}  // namespace

std::unique_ptr<Exchange> MakeLocalExchange(deeptte::DeepTTEImpl& model,
                                            const OptimizerConfig& opts, Tracer* tracer,
                                            std::unique_ptr<AdaScale> adascale) {
  return std::make_unique<LocalExchange>(model, opts, tracer, std::move(adascale));
}

}  // namespace tteps
