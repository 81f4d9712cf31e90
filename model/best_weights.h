// The weights of the best evaluation so far, for --keep_best: what a user gets as model.pt is
// the model that did best on the held-out trips, not whatever the last step left. Torch-free:
// the local trainer and the scheduler's evaluation keep flat parameter vectors.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/json_writer.h"

namespace tteps {

class BestWeights {
 public:
  // An evaluation of `params` after `step` steps: kept if its MAPE is finite and lower than
  // every one before (an equal one later does not replace it). Returns whether it was kept.
  bool Offer(int64_t step, double mape, std::string eval_json, const std::vector<float>& params) {
    if (!std::isfinite(mape) || (has_ && !(mape < mape_))) return false;
    has_ = true;
    step_ = step;
    mape_ = mape;
    eval_json_ = std::move(eval_json);
    params_ = params;
    return true;
  }
  bool has() const { return has_; }
  int64_t step() const { return step_; }
  double mape() const { return mape_; }
  const std::string& eval_json() const { return eval_json_; }  // {"mape":..,...}
  const std::vector<float>& params() const { return params_; }

 private:
  bool has_ = false;
  int64_t step_ = 0;
  double mape_ = 0;
  std::string eval_json_;
  std::vector<float> params_;
};

// {"step":N,"mape":..,"rmse":..,"mae":..,"n":..}: an evaluation's JSON with its step first.
inline std::string BestEvalJson(int64_t step, const std::string& eval_json) {
  return JsonObject().Add("step", step).AddMembers(eval_json).str();
}

}  // namespace tteps
