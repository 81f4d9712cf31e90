// The parameter-server exchange: push the step's gradient sum and its trip count to every
// shard, pull the weights of the next step (sync: the next version; SSP: once the slowest
// worker is close enough; async: whatever the servers hold). The consistency model itself
// lives in the servers (server/shard.h); this side only says which version it waits for.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "common/kv_client.h"
#include "common/trace.h"
#include "worker/deeptte/deeptte.h"
#include "worker/exchange/exchange.h"
#include "worker/param_layout.h"

namespace tteps {

struct PsExchangeOptions {
  int worker = 0;
  bool wait_for_version = true;  // sync and SSP: a pull names the step it is for; async: not
  bool send_norm = false;        // the servers clip by the norm of each push (async, SSP)
  Tracer* tracer = nullptr;
};

class PsExchange : public Exchange {
 public:
  PsExchange(deeptte::DeepTTEImpl& model, std::unique_ptr<KVClient> kv, PsExchangeOptions o);
  void Start(int64_t first_step) override;
  ExchangeResult Finish(int64_t step, int64_t trips, bool stop_vote, bool planned_last) override;
  void Report(TrainReport* report, int64_t steps) override;

 private:
  using Clock = std::chrono::steady_clock;
  int64_t Want(int64_t step) const { return o_.wait_for_version ? step : 0; }
  void TraceExchange(Clock::time_point begin, const PullResult& r);

  deeptte::DeepTTEImpl& model_;
  std::unique_ptr<KVClient> kv_;
  PsExchangeOptions o_;
  ParamLayout layout_;
  std::vector<float> params_;
  std::shared_ptr<std::vector<float>> grad_;
  PullResult pulled_;
  // The first pull is counted in the first step; later pulls in the exchange that ends a step.
  double carry_wait_ = 0, carry_pull_ = 0;
  double win_push_ = 0, win_pull_ = 0, win_staleness_ = 0;
};

}  // namespace tteps
