#include "model/evaluator.h"

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "model/data/padded_batch.h"
#include "model/deeptte/deeptte.h"

namespace tteps {

JsonObject EvalResult::ToJson() const {
  return JsonObject().Add("mape", mape).Add("rmse", rmse).Add("mae", mae).Add("n", n);
}

namespace {

// Calls fn(start, predictions, batch) for each batch of `trips` in order, without gradients;
// leaves the module's train/eval mode as it was.
template <class Fn>
void ForEachBatch(deeptte::DeepTTEImpl& model, const data::Trips& trips, int64_t batch_size,
                  Fn fn) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const torch::Device device = model.device();
  std::vector<size_t> indices;
  for (size_t start = 0; start < trips.size(); start += batch_size) {
    indices.resize(std::min<size_t>(batch_size, trips.size() - start));
    std::iota(indices.begin(), indices.end(), start);
    auto batch =
        deeptte::ToTensors(data::MakeBatch(trips, indices, model.stats(), model.pad_multiple()),
                           torch::kFloat, device);
    fn(start, model.PredictSeconds(batch), batch);
  }
  model.train(was_training);
}

void CopyOut(const torch::Tensor& pred, size_t start, std::vector<float>* out) {
  auto p = pred.to(torch::kCPU, torch::kFloat).contiguous();
  std::copy(p.data_ptr<float>(), p.data_ptr<float>() + p.numel(), out->begin() + start);
}

}  // namespace

EvalResult Evaluate(deeptte::DeepTTEImpl& model, const data::Trips& trips, int64_t batch_size,
                    bool keep_predictions) {
  EvalResult r;
  double abs_pct = 0, sq = 0, abs_err = 0;
  if (keep_predictions) r.predictions.resize(trips.size());
  ForEachBatch(model, trips, batch_size,
               [&](size_t start, const torch::Tensor& seconds, const deeptte::BatchTensors& batch) {
                 auto pred = seconds.to(torch::kDouble);
                 auto label = batch.label.to(torch::kDouble);
                 auto err = pred - label;
                 abs_pct += (err.abs() / label).sum().item<double>();
                 sq += (err * err).sum().item<double>();
                 abs_err += err.abs().sum().item<double>();
                 if (keep_predictions) CopyOut(seconds, start, &r.predictions);
               });
  r.n = static_cast<int64_t>(trips.size());
  if (r.n > 0) {
    r.mape = abs_pct / r.n;
    r.rmse = std::sqrt(sq / r.n);
    r.mae = abs_err / r.n;
  }
  if (!std::isfinite(r.mape) || !std::isfinite(r.rmse)) {
    throw std::runtime_error(
        "evaluation over " + std::to_string(r.n) + " trips gave MAPE " + std::to_string(r.mape) +
        ", RMSE " + std::to_string(r.rmse) +
        ": the predictions are not finite (a diverged model, or trips with extreme values)");
  }
  return r;
}

std::vector<float> Predict(deeptte::DeepTTEImpl& model, const data::Trips& trips,
                           int64_t batch_size) {
  std::vector<float> out(trips.size());
  ForEachBatch(model, trips, batch_size,
               [&](size_t start, const torch::Tensor& seconds, const deeptte::BatchTensors&) {
                 CopyOut(seconds, start, &out);
               });
  return out;
}

}  // namespace tteps
