// The exchanges, one per way of combining gradients; only the factory (make_exchange.cc) and
// tests construct them.
#pragma once

#include <memory>

#include "common/adascale.h"
#include "common/job_config.h"
#include "common/kv_client.h"
#include "common/trace.h"
#include "model/deeptte/deeptte.h"
#include "worker/exchange/exchange.h"
#include "worker/exchange/worker_group.h"

namespace tteps {

// Nothing to combine: the optimizer steps at once on this process's gradient (local mode),
// with AdaScale's gain when `adascale` is given.
std::unique_ptr<Exchange> MakeLocalExchange(deeptte::DeepTTEImpl& model,
                                            const OptimizerConfig& opts, Tracer* tracer,
                                            std::unique_ptr<AdaScale> adascale = nullptr);

struct PsExchangeOptions {
  int worker = 0;
  // A worker that joined (ClusterMap::own_slice): the slice its own pushes hold (-1: its id's).
  int own_slice = -1;
  bool wait_for_version = true;  // sync and SSP: a pull names the step it is for; async: not
  bool send_norm = false;        // the servers clip by the norm of each push (async, SSP)
  bool sparse_rows = true;       // embedding tables by the rows a step uses, not whole
  double push_bucket_mb = 0;     // sync only: push gradient buckets during backward (0: after it)
  bool pull_overlap = false;     // sync only: the next forward starts on the first blocks pulled
  Tracer* tracer = nullptr;
  // Sync, where a worker may be lost: the last step waits for its completion (one key).
  bool last_step_waits = false;
};
// Push to and pull from the parameter servers (sync, async, SSP).
std::unique_ptr<Exchange> MakePsExchange(deeptte::DeepTTEImpl& model, std::unique_ptr<KVClient> kv,
                                         PsExchangeOptions o);

// Gradient allreduce over the workers, bucket by bucket during backward (ring mode).
// `bucket_mb`: gradient bucket size (<= 0: one bucket). `adascale`: the rate's gain, from the
// slices' pieces summed with the gradient (every worker takes the same).
std::unique_ptr<Exchange> MakeRingExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                                           std::unique_ptr<WorkerGroup> group, double bucket_mb,
                                           Tracer* tracer,
                                           std::unique_ptr<AdaScale> adascale = nullptr);

// Local steps and a trip-weighted parameter average every `average_every` steps.
std::unique_ptr<Exchange> MakeAverageExchange(deeptte::DeepTTEImpl& model,
                                              const OptimizerConfig& opts,
                                              std::unique_ptr<WorkerGroup> group,
                                              int64_t average_every, Tracer* tracer);

}  // namespace tteps
