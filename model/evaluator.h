// Evaluation of a DeepTTE model on a set of trips: MAPE, RMSE and MAE in seconds.
#pragma once

#include <cstdint>
#include <vector>

#include "common/json_writer.h"
#include "model/data/trips.h"

namespace tteps {
namespace deeptte {
class DeepTTEImpl;
}

struct EvalResult {
  double mape = 0;  // mean |pred - label| / label
  double rmse = 0;  // seconds
  double mae = 0;   // seconds
  int64_t n = 0;
  std::vector<float> predictions;  // seconds, one per trip in input order (if asked for)

  JsonObject ToJson() const;  // {"mape":..,"rmse":..,"mae":..,"n":..}
};

// Runs the entire estimator without gradients; leaves the module's train/eval mode as it was.
// Throws std::runtime_error if a prediction is not finite: a diverged model never reports a
// null MAPE.
EvalResult Evaluate(deeptte::DeepTTEImpl& model, const data::Trips& trips, int64_t batch_size,
                    bool keep_predictions = false);

// The model's travel-time estimate (seconds) of each trip, in order; the trips' `time` is not
// read (routes not yet driven). A diverged model's estimates may not be finite: the caller,
// who knows where each trip came from, checks.
std::vector<float> Predict(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                           int64_t batch_size);

}  // namespace tteps
