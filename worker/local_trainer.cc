#include "worker/local_trainer.h"

#include <glog/logging.h>

#include <chrono>

#include "common/clock.h"
#include "common/interrupt.h"
#include "common/patience.h"
#include "common/progress.h"
#include "model/model_params.h"
#include "worker/exchange/exchanges.h"
#include "worker/step_driver.h"

namespace tteps {

LocalTrainer::LocalTrainer(deeptte::DeepTTE model, const data::Trips& train,
                           const data::Trips& eval, const JobConfig& config, RunOutput* out)
    : model_(std::move(model)), train_(train), eval_(eval), config_(config), out_(out) {}

void LocalTrainer::LogEval(const EvalResult& r, int64_t step, int64_t epoch, double wall_s,
                           double train_s) {
  LOG(INFO) << "eval step " << step << ": " << r.ToJson().str();
  if (!out_) return;
  out_->AppendMetrics(JsonObject()
                          .Add("type", "eval")
                          .Add("step", step)
                          .Add("epoch", epoch)
                          .Add("wall_s", wall_s)
                          .Add("train_s", train_s)
                          .AddRaw("eval", r.ToJson().str()));
}

DriverOptions LocalTrainer::Options() const {
  DriverOptions o;
  o.accumulation = config_.exchange.accumulation;
  o.max_train_s = config_.train.max_train_s;
  o.tracer = tracer_;
  SetNoiseGeometry(config_, &o);
  if (config_.optimizer.lr_scaling != "none") {
    o.noise_pieces = config_.optimizer.lr_scaling_workers;
    o.pieces_first_worker_batch = config_.exchange.first_worker_batch;
    o.pieces_balanced = config_.exchange.slicing == "balanced";
  }
  return o;
}

void LocalTrainer::SliceEverything(DriverOptions* o) const {
  const int slices = static_cast<int>(config_.exchange.slices);
  if (slices <= 1) return;
  // The slicing rule of a sync job with `slices` slices; this process is worker 0 and adopts
  // every other slice before the first step, as a sync worker does one past the workers.
  o->num_workers = slices;
  o->first_worker_batch = config_.exchange.first_worker_batch;
  o->balanced_slices = config_.exchange.slicing == "balanced";
  if (config_.optimizer.lr_scaling != "none") {  // a sync worker's slice is one noise piece
    o->noise_pieces = 1;
    o->pieces_first_worker_batch = -1;
    o->pieces_balanced = false;
  }
}

// A local job's link: its start, its reports (metrics.jsonl, the progress line), its stop
// (--patience, or SIGTERM / SIGINT: the step in progress completes first), --slices' adoptions,
// and its evaluations (this process's weights are the job's).
class LocalTrainer::Link : public StepLink {
 public:
  Link(LocalTrainer& trainer, ProgressLine& progress, TrainResult& res, Clock::time_point start)
      : t_(trainer),
        progress_(progress),
        res_(res),
        start_(start),
        layout_(LayoutOf(*trainer.model_)),
        patience_(trainer.config_.train.patience) {}

  void Ready() override { res_.startup_s = ProcessAgeSeconds(); }
  bool StopRequested() override { return res_.early_stop_step >= 0 || InterruptSignal() != 0; }
  std::vector<StepCommand> TakeCommands() override {
    std::vector<StepCommand> commands;
    const int slices = static_cast<int>(t_.config_.exchange.slices);
    for (int s = 1; s < slices && !adopted_; ++s) {
      StepCommand c;
      c.kind = StepCommand::kAdopt;
      c.slice = s;
      commands.push_back(c);
    }
    adopted_ = true;
    return commands;
  }
  void Report(const TrainReport& r) override {
    if (t_.out_) t_.out_->AppendMetrics(r.ToJson());
    progress_.Update(r.epoch, r.step, r.loss, r.trips_per_s);
  }
  bool Evaluates() const override { return true; }
  void Evaluate(int64_t steps, int64_t epoch, double train_s, bool final) override;

 private:
  LocalTrainer& t_;
  ProgressLine& progress_;
  TrainResult& res_;
  const Clock::time_point start_;
  const ParamLayout layout_;
  std::vector<float> params_;
  Patience patience_;
  bool adopted_ = false;
};

void LocalTrainer::Link::Evaluate(int64_t steps, int64_t epoch, double train_s, bool final) {
  if (t_.eval_.empty()) return;  // nothing to evaluate on: no evaluation, no best model
  const TrainConfig& opts = t_.config_.train;
  EvalResult r;
  {
    ScopedSpan span(t_.tracer_, "eval");
    r = tteps::Evaluate(*t_.model_, t_.eval_, opts.eval_batch_size);
  }
  res_.evaluated = true;
  if (final) res_.final_eval = r;
  if (t_.config_.output.keep_best) {
    params_.resize(layout_.total());
    CopyParamsOut(*t_.model_, layout_, params_.data());
    res_.best.Offer(steps, r.mape, r.ToJson().str(), params_);
  }
  t_.LogEval(r, steps, epoch, SecondsSince(start_), train_s);
  if (!final && res_.early_stop_step < 0 && patience_.Offer(r.mape)) {
    res_.early_stop_step = steps;
    LOG(WARNING) << "no lower MAPE in " << opts.patience << " evaluations (--patience): "
                 << "training stops after step " << steps + 1;
  }
}

TrainResult LocalTrainer::Run() {
  const auto start = Clock::now();
  const auto since_start = [&] { return SecondsSince(start); };
  const TrainConfig& opts = config_.train;
  OptimizerConfig optimizer = config_.optimizer;
  if (optimizer.lr_steps == 0) optimizer.lr_steps = TotalSteps(opts, train_.size());
  auto exchange =
      MakeLocalExchange(*model_, optimizer, tracer_, MakeAdaScale(optimizer, opts.batch_size));
  ProgressLine progress("local", TotalSteps(opts, train_.size()), opts.progress_s);
  TrainResult res;

  DriverOptions o = Options();
  SliceEverything(&o);
  Link link(*this, progress, res, start);
  const DriverResult d = StepDriver(*model_, train_, opts, o, &link, exchange.get()).Run();
  progress.Update(d.epochs - 1, d.steps, d.last_loss,
                  d.train_seconds > 0 ? d.trips / d.train_seconds : 0.0, /*force=*/true);
  res.steps = d.steps;
  res.epochs = d.epochs;
  res.trips = d.trips;
  res.train_seconds = d.train_seconds;
  res.last_loss = d.last_loss;
  res.wall_seconds = since_start();
  return res;
}

}  // namespace tteps
