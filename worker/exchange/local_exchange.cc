// The local exchange: nothing to combine with other workers. The step's gradient is this
// process's, and the optimizer steps at once. `local` mode, the reference that every distributed
// mode must match. With --slices N the process computes every slice of the global batch, each
// on its own, and adds their gradients in slice order as the servers do: the sliced sync model,
// bit for bit.

#include <map>
#include <string>
#include <vector>

#include "common/trace.h"
#include "model/model_params.h"
#include "worker/exchange/exchanges.h"
#include "worker/exchange/local_optimizer.h"

namespace tteps {
namespace {

class LocalExchange : public Exchange {
 public:
  LocalExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts, Tracer* tracer,
                std::unique_ptr<AdaScale> adascale)
      : model_(model),
        layout_(LayoutOf(model)),
        optimizer_(model, opts, std::move(adascale)),
        tracer_(tracer) {}
  void Start(int64_t /*first_step*/, const TableRows* /*rows*/) override {}
  ExchangeResult Finish(const StepEnd& e) override;
  // Another slice of this step (--slices): kept until the step ends.
  void PushSlice(const SlicePush& p) override;

 private:
  struct Slice {
    std::vector<float> grad;
    int64_t trips = 0;
    PieceNoise pieces;
  };
  // Leaves the sum of the step's slices (the own one, slice 0, and the pushed ones) in the
  // model's gradients, added in slice order from zero as a server adds the pushes; returns the
  // trips and pieces of them all.
  int64_t SumSlices(int64_t own_trips, PieceNoise* pieces);

  deeptte::DeepTTEImpl& model_;
  const ParamLayout layout_;
  LocalOptimizer optimizer_;
  Tracer* tracer_;
  std::map<int, Slice> slices_;  // by slice number
};

void LocalExchange::PushSlice(const SlicePush& p) {
  Slice& s = slices_[p.slice];
  s.grad.resize(layout_.total());
  CopyGradsOut(model_, layout_, s.grad.data());
  s.trips = p.trips;
  s.pieces = p.pieces;
}

int64_t LocalExchange::SumSlices(int64_t own_trips, PieceNoise* pieces) {
  Slice& own = slices_[0];
  own.grad.resize(layout_.total());
  CopyGradsOut(model_, layout_, own.grad.data());
  own.trips = own_trips;
  own.pieces = *pieces;
  std::vector<float> sum(layout_.total(), 0.f);
  int64_t trips = 0;
  *pieces = {};
  for (const auto& [slice, s] : slices_) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += s.grad[i];
    trips += s.trips;
    pieces->sq += s.pieces.sq;
    pieces->n2 += s.pieces.n2;
  }
  CopyGradsIn(model_, layout_, sum.data());
  slices_.clear();
  return trips;
}

ExchangeResult LocalExchange::Finish(const StepEnd& e) {
  const auto t = Tracer::Clock::now();
  int64_t trips = e.trips;
  PieceNoise pieces = e.pieces;
  if (!slices_.empty()) trips = SumSlices(e.trips, &pieces);
  if (trips > 0) optimizer_.Step(e.step, trips, pieces);
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
