// The local exchange: nothing to combine. The step's gradient is this process's, and the
// optimizer steps at once. `local` mode, the reference that every distributed mode must match.

#include <stdexcept>
#include <string>

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
  void Start(int64_t /*first_step*/, const TableRows* /*rows*/) override {}
  ExchangeResult Finish(const StepEnd& e) override;
  void PushSlice(const SlicePush& p) override {
    throw std::logic_error("local training has no other worker's slice to push (slice " +
                           std::to_string(p.slice) + ")");
  }

 private:
  LocalOptimizer optimizer_;
  Tracer* tracer_;
};

ExchangeResult LocalExchange::Finish(const StepEnd& e) {
  const auto t = Tracer::Clock::now();
  if (e.trips > 0) optimizer_.Step(e.step, e.trips, e.pieces);
  TraceSince(tracer_, "optimizer", t);
  ExchangeResult r;
  r.stop = e.stop_vote;  // one worker agrees with itself
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
