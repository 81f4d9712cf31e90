#include "worker/train_options.h"

#include <algorithm>
#include <stdexcept>

namespace tteps {

void TrainOptions::Validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  if (optimizer != "adam" && optimizer != "sgd" && optimizer != "momentum") {
    fail("--optimizer must be adam, sgd or momentum, not '" + optimizer + "'");
  }
  if (!(lr > 0)) fail("--lr must be > 0");
  if (batch_size < 1) fail("--batch_size must be >= 1");
  if (epochs < 1 && max_steps < 1) fail("--epochs or --max_steps must be >= 1");
  if (max_steps < 0) fail("--max_steps must be >= 0");
  if (log_every < 1) fail("--log_every must be >= 1");
  if (eval_every < 0) fail("--eval_every must be >= 0");
  if (!(eval_every_s >= 0)) fail("--eval_every_s must be >= 0");
  if (!(max_train_s >= 0)) fail("--max_train_s must be >= 0");
  if (eval_batch_size < 1) fail("--eval_batch_size must be >= 1");
}

}  // namespace tteps

namespace tteps {

int64_t TotalSteps(const TrainOptions& opts, size_t num_trips) {
  const int64_t per_epoch =
      (static_cast<int64_t>(num_trips) + opts.batch_size - 1) / opts.batch_size;
  int64_t total = per_epoch * std::max<int64_t>(opts.epochs, 0);
  if (opts.max_steps > 0 && (opts.epochs < 1 || opts.max_steps < total)) total = opts.max_steps;
  return total;
}

}  // namespace tteps
