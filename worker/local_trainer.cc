#include "worker/local_trainer.h"

#include <glog/logging.h>

#include <chrono>

#include "common/progress.h"
#include "worker/data/batcher.h"
#include "worker/gradient_step.h"

namespace tteps {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

LocalTrainer::LocalTrainer(deeptte::DeepTTE model, const std::vector<data::Trip>& train,
                           const std::vector<data::Trip>& eval, const TrainOptions& opts,
                           RunOutput* out)
    : model_(std::move(model)), train_(train), eval_(eval), opts_(opts), out_(out) {
  opts_.Validate();
}

void LocalTrainer::LogEval(int64_t step, int64_t epoch, double wall_s, double train_s) {
  if (eval_.empty()) return;
  ScopedSpan span(tracer_, "eval");
  auto r = Evaluate(*model_, eval_, opts_.eval_batch_size);
  LOG(INFO) << "eval step " << step << ": " << r.ToJson().str();
  if (out_) {
    out_->AppendMetrics(JsonObject()
                            .Add("type", "eval")
                            .Add("step", step)
                            .Add("epoch", epoch)
                            .Add("wall_s", wall_s)
                            .Add("train_s", train_s)
                            .Add("mape", r.mape)
                            .Add("rmse", r.rmse)
                            .Add("mae", r.mae)
                            .Add("n", r.n));
  }
}

TrainResult LocalTrainer::Run() {
  std::vector<size_t> lengths;
  lengths.reserve(train_.size());
  for (const auto& t : train_) lengths.push_back(t.length());
  const int64_t steps_per_epoch = (train_.size() + opts_.batch_size - 1) / opts_.batch_size;
  const int64_t total_steps = TotalSteps(opts_, train_.size());
  const int64_t epochs = (total_steps + steps_per_epoch - 1) / steps_per_epoch;

  auto optimizer = MakeOptimizer(opts_, model_->parameters());
  ProgressLine progress("local", total_steps, opts_.progress_s);
  TrainResult res;
  const auto start = Clock::now();
  double last_eval_s = 0;  // training seconds at the last evaluation
  bool out_of_time = false;
  double window_loss = 0;
  int64_t window_trips = 0;
  double window_seconds = 0;

  for (int64_t epoch = 0; epoch < epochs && res.steps < total_steps; ++epoch) {
    res.epochs = epoch + 1;
    for (const auto& batch : data::EpochBatches(lengths, opts_.batch_size, opts_.seed, epoch)) {
      const auto t0 = Clock::now();
      optimizer->zero_grad();
      auto s = AccumulateGradients(*model_, train_, batch);
      ScaleGradients(*model_, 1.0 / s.trips);
      TraceSince(tracer_, "compute", t0);
      const auto t_opt = Clock::now();
      if (opts_.clip_norm > 0) {
        torch::nn::utils::clip_grad_norm_(model_->parameters(), opts_.clip_norm);
      }
      optimizer->step();
      TraceSince(tracer_, "optimizer", t_opt);
      const double dt = Since(t0);
      ++res.steps;
      res.trips += s.trips;
      res.train_seconds += dt;
      window_loss += s.loss_sum;
      window_trips += s.trips;
      window_seconds += dt;

      // Training time is the steps' time: the evaluations here run inline, which in the
      // distributed modes run beside training on the scheduler.
      out_of_time = opts_.max_train_s > 0 && res.train_seconds >= opts_.max_train_s;
      const bool last = res.steps == total_steps || out_of_time;
      if (out_of_time && res.steps < total_steps) {
        LOG(INFO) << "time budget of " << opts_.max_train_s << " s spent: stopping after step "
                  << res.steps;
      }
      if (res.steps % opts_.log_every == 0 || last) {
        res.last_loss = window_loss / window_trips;
        const double tps = window_trips / window_seconds;
        if (out_) {
          out_->AppendMetrics(JsonObject()
                                  .Add("type", "train")
                                  .Add("step", res.steps)
                                  .Add("epoch", epoch)
                                  .Add("wall_s", Since(start))
                                  .Add("loss", res.last_loss)
                                  .Add("trips_per_s", tps));
        }
        progress.Update(epoch, res.steps, res.last_loss, tps, last);
        window_loss = 0;
        window_trips = 0;
        window_seconds = 0;
      }
      if (opts_.eval_every_s > 0 ? res.train_seconds - last_eval_s >= opts_.eval_every_s
                                 : opts_.eval_every > 0 && res.steps % opts_.eval_every == 0) {
        LogEval(res.steps, epoch, Since(start), res.train_seconds);
        last_eval_s = res.train_seconds;
      }
      if (last) break;
    }
    if (out_of_time) break;  // the final evaluation below covers these parameters
    if (opts_.eval_every == 0 && opts_.eval_every_s == 0) {
      LogEval(res.steps, epoch, Since(start), res.train_seconds);
    }
  }
  res.final_eval = Evaluate(*model_, eval_, opts_.eval_batch_size);
  res.wall_seconds = Since(start);
  return res;
}

}  // namespace tteps
