#include "common/job_config.h"

#include <algorithm>
#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cmath>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace tteps {
namespace {

std::string Str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

[[noreturn]] void Fail(const std::string& what) { throw std::invalid_argument(what); }

void Check(bool ok, const std::string& what) {
  if (!ok) Fail(what);
}

}  // namespace

void ModelConfig::Validate() const {
  auto check = [](bool ok, const std::string& what) { Check(ok, "model config: " + what); };
  check(kernel_size >= 2, "kernel_size must be >= 2");
  check(num_filter >= 1, "num_filter must be >= 1");
  check(pooling == "attention" || pooling == "mean", "pooling must be attention or mean");
  check(local_loss_weight >= 0.0 && local_loss_weight <= 1.0,
        "local_loss_weight must be in [0, 1]");
  check(num_final_fcs >= 0, "num_final_fcs must be >= 0");
  check(final_fc_size >= 1, "final_fc_size must be >= 1");
}

void OptimizerConfig::Validate() const {
  if (name != "adam" && name != "sgd" && name != "momentum") {
    Fail("unknown optimizer '" + name + "': OptimizerConfig.name must be adam, sgd or momentum");
  }
  if (!(std::isfinite(lr) && lr > 0)) {
    Fail("OptimizerConfig.lr must be finite and > 0, got " + Str(lr));
  }
  const auto check_unit = [](const char* field, double v) {
    if (!(v >= 0 && v < 1)) {
      Fail(std::string("OptimizerConfig.") + field + " must be in [0, 1), got " + Str(v));
    }
  };
  check_unit("momentum", momentum);
  check_unit("beta1", beta1);
  check_unit("beta2", beta2);
  if (!(std::isfinite(eps) && eps >= 0)) {
    Fail("OptimizerConfig.eps must be finite and >= 0, got " + Str(eps));
  }
  Check(clip_norm >= 0, "--clip_norm must be >= 0");
  Check(lr_schedule == "constant" || lr_schedule == "cosine" || lr_schedule == "step",
        "--lr_schedule must be constant, cosine or step, got '" + lr_schedule + "'");
  Check(warmup_steps >= 0, "--warmup_steps must be >= 0");
  Check(lr_steps >= 0, "--lr_steps must be >= 0");
  Check(lr_schedule != "cosine" || lr_steps == 0 || lr_steps > warmup_steps,
        "--lr_schedule cosine needs --lr_steps > --warmup_steps");
  Check(lr_schedule != "step" || lr_decay_every > 0,
        "--lr_schedule step needs --lr_decay_every > 0");
  Check(std::isfinite(lr_decay) && lr_decay > 0 && lr_decay <= 1, "--lr_decay must be in (0, 1]");
  Check(lr_scaling == "none" || lr_scaling == "adascale",
        "--lr_scaling must be none or adascale, not '" + lr_scaling + "'");
  Check(lr_scaling_base >= 0, "--lr_scaling_base must be >= 0");
  Check(lr_scaling_workers >= 1, "--lr_scaling_workers must be >= 1");
  Check(noise_geometry == "optimizer" || noise_geometry == "plain",
        "--noise_geometry must be optimizer or plain, not '" + noise_geometry + "'");
}

void DataConfig::Validate() const {
  Check(!train_files.empty(), "--train_data names no file");
  Check(eval_fraction >= 0 && eval_fraction < 1, "--eval_fraction must be in [0, 1)");
  Check(split == "auto" || split == "day" || split == "random" || split == "tail",
        "--split must be auto, day, random or tail, not '" + split + "'");
  Check(eval_days >= 1, "--eval_days must be >= 1");
  Check(max_points >= 0, "--max_points must be >= 0 (0: no limit)");
  Check(max_trip_s > 0, "--max_trip_s must be > 0");
  Check(max_trip_km > 0, "--max_trip_km must be > 0");
  Check(
      std::all_of(eval_dates.begin(), eval_dates.end(), [](int64_t d) { return d >= 0 && d < 31; }),
      "--eval_dates must be dateIDs in [0, 31)");
  Check(bad_records == "fail" || bad_records == "skip",
        "--bad_records must be fail or skip, not '" + bad_records + "'");
}

void TrainConfig::Validate() const {
  Check(batch_size >= 1, "--batch_size must be >= 1");
  Check(shuffle_window >= 0, "--shuffle_window must be >= 0");
  Check(epochs >= 1 || max_steps >= 1, "--epochs or --max_steps must be >= 1");
  Check(max_steps >= 0, "--max_steps must be >= 0");
  Check(log_every >= 1, "--log_every must be >= 1");
  Check(eval.every_steps >= 0, "--eval_every must be >= 0");
  Check(eval.every_s >= 0, "--eval_every_s must be >= 0");
  Check(max_train_s >= 0, "--max_train_s must be >= 0");
  Check(eval_batch_size >= 1, "--eval_batch_size must be >= 1");
  Check(threads >= 1, "--threads must be >= 1");
  Check(std::regex_match(device, std::regex("cpu|cuda(:[0-9]+)?")),
        "--device must be cpu, cuda or cuda:N, not '" + device + "'");
  Check(slowdown_percent >= 0, "--slowdown must be >= 0");
  Check(std::all_of(slowdowns.begin(), slowdowns.end(), [](int64_t p) { return p >= 0; }),
        "--slowdowns must all be >= 0");
  Check(slowdowns.empty() || slowdown_worker < 0,
        "--slowdowns gives every worker its slowdown: leave out --slowdown_worker");
  Check(slowdown_on_s == 0 ? slowdown_period_s == 0
                           : slowdown_on_s > 0 && slowdown_period_s > slowdown_on_s,
        "--slowdown_schedule ON/PERIOD needs 0 < ON < PERIOD (seconds)");
}

void ExchangeConfig::Validate() const {
  Check(accumulation >= 1, "--accumulation must be >= 1");
  Check(slices >= 0, "--slices must be >= 0 (0: one per worker)");
  Check(staleness >= 0, "--staleness must be >= 0");
  Check(allreduce == "ring" || allreduce == "mpi",
        "--allreduce must be ring or mpi, not '" + allreduce + "'");
  Check(ring_transport == "tcp" || ring_transport == "mpi",
        "--ring_transport must be tcp or mpi, not '" + ring_transport + "'");
  Check(push_bucket_mb >= 0, "--push_bucket_mb must be >= 0");
  Check(slicing == "balanced" || slicing == "even",
        "--slicing must be balanced or even, not '" + slicing + "'");
  Check(wire_dtype == "fp32" || wire_dtype == "bf16",
        "--wire_dtype must be fp32 or bf16, not '" + wire_dtype + "'");
  Check(check_every >= 1, "--check_every must be >= 1");
  Check(average_every >= 1, "--average_every must be >= 1");
}

void PolicyConfig::Validate() const {
  Check(name == "fixed" || name == "speed" || name == "goodput" || name == "ppo",
        "--accumulation_policy must be fixed, speed, goodput or ppo, not '" + name + "'");
  Check(scope == "job" || scope == "worker",
        "--ppo_scope must be job or worker, not '" + scope + "'");
  Check(name != "goodput" || accumulation_min >= 2,
        "--accumulation_policy goodput: --accumulation_min must be >= 2 (a worker measures the "
        "gradient noise from two micro-batches or more)");
}

void JobConfig::Validate() const {
  data.Validate();
  model.Validate();
  optimizer.Validate();
  train.Validate();
  exchange.Validate();
  policy.Validate();
  const ExchangeConfig& x = exchange;
  // AdaScale needs every slice's pieces where the step is taken: the servers of a sync job,
  // every worker of a ring, or the one process of a local job (averaging workers step on their
  // own gradients, async and SSP have no step of every slice).
  Check(optimizer.lr_scaling == "none" || StepsOnWholeBatch(x.mode),
        std::string("--lr_scaling adascale: sync, ring and local modes only, not ") +
            ModeName(x.mode));
  if (!UsesServers(x.mode)) {
    Check(output.resume.empty() && output.checkpoint_every == 0,
          std::string("--resume and --checkpoint_every: checkpoints are kept by the parameter "
                      "servers, and --mode ") +
              ModeName(x.mode) + " has none");
  }

  const PolicyConfig& p = policy;
  // The agent's own settings are checked by the scheduler's CheckPpo (scheduler/make_policy.h);
  // here only what ties them to the rest of the job.
  if (p.name != "fixed") {
    Check(x.accumulation >= p.accumulation_min && x.accumulation <= p.accumulation_max,
          "--accumulation (the starting value) must lie in [--accumulation_min, "
          "--accumulation_max]");
  }

  Check(output.checkpoint_every >= 0, "--checkpoint_every must be >= 0");
  Check(cluster.timeout_s > 0, "--timeout_s must be > 0");
  Check(train.patience >= 0, "--patience must be >= 0");
  Check(cluster.heartbeat_s > 0, "--heartbeat_s must be > 0");
  Check(cluster.silence_s >= 0, "--silence_s must be >= 0");
  Check(cluster.replicas >= 1, "--replicas must be >= 1");
  Check(cluster.min_workers >= 0, "--min_workers must be >= 0");
  Check(cluster.min_workers == 0 || UsesServers(x.mode),
        std::string("--min_workers: workers join parameter-server jobs only (sync, async, ssp), "
                    "and --mode ") +
            ModeName(x.mode) + " would only wait for nobody");
  Check(cluster.replicas == 1 || UsesServers(x.mode),
        std::string("--replicas: the parameter servers keep replicas, and --mode ") +
            ModeName(x.mode) + " has none");
}

std::string JobConfig::ToJson() const {
  std::ostringstream os;
  {
    cereal::JSONOutputArchive ar(os);
    // Saving does not modify: cereal itself calls serialize() on const objects this way.
    const_cast<JobConfig*>(this)->serialize(ar);
  }
  return os.str() + "\n";
}

JobConfig JobConfig::FromJson(const std::string& json) {
  JobConfig c;
  try {
    std::istringstream in(json);
    cereal::JSONInputArchive ar(in);
    c.serialize(ar);
  } catch (const cereal::Exception& e) {
    throw std::invalid_argument(std::string("not a job configuration: ") + e.what());
  }
  return c;
}

int64_t JobConfig::MaxPushTrips() const {
  const int64_t most = policy.name == "fixed"
                           ? exchange.accumulation
                           : std::max(exchange.accumulation, policy.accumulation_max);
  return train.batch_size * most;
}

int64_t TrainConfig::SlowdownOf(int worker) const {
  if (!slowdowns.empty()) {
    return worker >= 0 && static_cast<size_t>(worker) < slowdowns.size() ? slowdowns[worker] : 0;
  }
  return worker == slowdown_worker ? slowdown_percent : 0;
}

int64_t TotalSteps(const TrainConfig& c, size_t num_trips) {
  const int64_t per_epoch = (static_cast<int64_t>(num_trips) + c.batch_size - 1) / c.batch_size;
  int64_t total = per_epoch * std::max<int64_t>(c.epochs, 0);
  if (c.max_steps > 0 && (c.epochs < 1 || c.max_steps < total)) total = c.max_steps;
  return total;
}

std::vector<std::string> ResumeMismatches(const JobConfig& checkpoint, const JobConfig& now) {
  std::vector<std::string> out;
  const auto differ = [&](const char* flag, const auto& then, const auto& here) {
    if (then == here) return;
    std::ostringstream line;
    line << "--" << flag << " " << here << " (the checkpoint's job: " << then << ")";
    out.push_back(line.str());
  };
  const ModelConfig &a = checkpoint.model, &b = now.model;
  differ("kernel_size", a.kernel_size, b.kernel_size);
  differ("num_filter", a.num_filter, b.num_filter);
  differ("pooling", a.pooling, b.pooling);
  differ("num_final_fcs", a.num_final_fcs, b.num_final_fcs);
  differ("final_fc_size", a.final_fc_size, b.final_fc_size);
  differ("optimizer", checkpoint.optimizer.name, now.optimizer.name);
  differ("mode", std::string(ModeName(checkpoint.exchange.mode)),
         std::string(ModeName(now.exchange.mode)));
  differ("replicas", checkpoint.cluster.replicas, now.cluster.replicas);
  // 0: one per worker, resolved once the workers are known (the launcher's --check does not
  // know them; the scheduler compares again with the number).
  if (now.exchange.slices > 0) differ("slices", checkpoint.exchange.slices, now.exchange.slices);
  return out;
}

void CheckBatchFits(const TrainConfig& c, size_t num_trips) {
  if (num_trips == 0 || c.batch_size <= static_cast<int64_t>(num_trips)) return;
  throw std::invalid_argument("--batch_size " + std::to_string(c.batch_size) +
                              " is larger than the training set (" + std::to_string(num_trips) +
                              " trips): every step would take all of them; use --batch_size " +
                              std::to_string(num_trips) + " or less");
}

}  // namespace tteps
