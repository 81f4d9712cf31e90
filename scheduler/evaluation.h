// Evaluation of the model, off the coordination loop's thread (the coordinator never waits for
// it): of the servers' current weights in the parameter-server modes, of the snapshots worker 0
// sends in the ring modes. Interface here; the LibTorch implementation is in
// evaluation.cc so the coordinator itself stays free of LibTorch.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cluster_map.h"

namespace tteps::scheduler {

struct EvalOutcome {
  int64_t step = 0;     // the training step that asked for it
  int64_t version = 0;  // server version evaluated (ring modes: the snapshot's step)
  bool final = false;
  double train_s = 0;  // training seconds when it was asked for (the parameters' age)
  std::string json;    // {"mape":..,"rmse":..,"mae":..,"n":..}; "null": no evaluation trips
  double mape = 0;
  bool best = false;  // the best evaluation so far (--keep_best: model.pt gets its weights)
  std::string error;  // non-empty if the evaluation failed
};

class Evaluation {
 public:
  virtual ~Evaluation() = default;
  // Called once the cluster map is known.
  virtual void Start(const ClusterMap& map) = 0;
  // Asks for an evaluation at `step`; ignored while one is running, unless `final` (then
  // queued; the final one also writes model.pt and model_last.pt).
  // `train_s`: training seconds at the request, reported with the outcome.
  virtual void Request(int64_t step, bool final, double train_s) = 0;
  // Evaluates these flat parameters (the modes without servers); same queueing rule.
  virtual void Offer(int64_t step, bool final, std::vector<float> params, double train_s) = 0;
  virtual std::optional<EvalOutcome> Poll() = 0;
  // --replicas: `server` was declared lost; later pulls read its range from a replica.
  virtual void LoseServer(int /*server*/) {}
  // A rollback: the servers are those of `map` from now on (an evaluation pulling from the old
  // ones is abandoned).
  virtual void Remap(const ClusterMap& /*map*/) {}
};

}  // namespace tteps::scheduler
