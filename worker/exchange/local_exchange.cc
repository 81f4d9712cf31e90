#include "worker/exchange/local_exchange.h"

namespace tteps {

ExchangeResult LocalExchange::Finish(int64_t /*step*/, int64_t trips, bool stop_vote,
                                     bool /*planned_last*/) {
  const auto t = Tracer::Clock::now();
  if (trips > 0) optimizer_.Step(static_cast<double>(trips));
  TraceSince(tracer_, "optimizer", t);
  ExchangeResult r;
  r.stop = stop_vote;  // one worker agrees with itself
  r.compute_s = std::chrono::duration<double>(Tracer::Clock::now() - t).count();
  return r;
}

}  // namespace tteps
