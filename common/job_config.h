// The job's configuration as one typed value: filled from flags in the programs' main files
// only, validated once, sent by the scheduler to every node inside the cluster map (Cereal) and
// written to out_dir/config.json. Plain data: no flags, no roles.
#pragma once

#include <cereal/cereal.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/eval_schedule.h"
#include "common/mode.h"

namespace tteps {

struct DataConfig {
  std::vector<std::string> train_files;
  std::string eval_file;          // if set, the evaluation set; else a held-out fraction
  double eval_fraction = 0.1667;  // of the training files, used when eval_file is empty
  // day (the latest days by dateID) | random (seeded shuffle) | tail (the last trips) | auto
  // (day where the data holds two dates or more, else random)
  std::string split = "auto";
  uint64_t split_seed = 1;
  int64_t eval_days = 1;             // --split day: how many of the latest days
  std::vector<int64_t> eval_dates;   // --split day: these dateIDs instead, if any
  std::string bad_records = "fail";  // fail | skip
  std::string stats;  // normalisation statistics (stats.json); empty: the training data's own
  // What a trip may be (a longer or an implausible one is a bad record): points, seconds, km.
  int64_t max_points = 2000;
  double max_trip_s = 86400, max_trip_km = 1000;

  // Throws std::invalid_argument naming the flag of the first bad value.
  void Validate() const;

  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(train_files), CEREAL_NVP(eval_file), CEREAL_NVP(eval_fraction), CEREAL_NVP(split),
       CEREAL_NVP(split_seed), CEREAL_NVP(eval_days), CEREAL_NVP(eval_dates),
       CEREAL_NVP(bad_records), CEREAL_NVP(stats), CEREAL_NVP(max_points), CEREAL_NVP(max_trip_s),
       CEREAL_NVP(max_trip_km));
  }
};

// DeepTTE's hyperparameters.
struct ModelConfig {
  int64_t kernel_size = 3;            // Geo-Conv window, in points
  int64_t num_filter = 32;            // Geo-Conv output channels
  std::string pooling = "attention";  // "attention" | "mean"
  double local_loss_weight = 0.1;     // (1 - w) entire + w local (the paper's alpha)
  int64_t num_final_fcs = 3;          // residual layers of the entire estimator
  int64_t final_fc_size = 128;        // width of the entire estimator

  // Throws std::invalid_argument naming the bad field.
  void Validate() const;
  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(kernel_size), CEREAL_NVP(num_filter), CEREAL_NVP(pooling),
       CEREAL_NVP(local_loss_weight), CEREAL_NVP(num_final_fcs), CEREAL_NVP(final_fc_size));
  }
};

// The update rule, applied by the servers (PS modes) or by every worker (the others).
struct OptimizerConfig {
  std::string name = "adam";  // adam | sgd | momentum
  double lr = 1e-3;
  double momentum = 0.9;  // for "momentum" (dampening 0, no Nesterov: torch::optim::SGD semantics)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // for "adam" (torch::optim::Adam defaults, no
                                                  // amsgrad, no weight decay)
  double clip_norm = 0;  // clip each step's gradient to this global L2 norm (0: off)
  // The rate per step (common/lr_schedule.h).
  std::string lr_schedule = "constant";  // constant | cosine | step
  int64_t warmup_steps = 0;              // linear warm-up over the first steps
  int64_t lr_steps = 0;                  // cosine: steps to reach 0 (0: the job's planned steps)
  int64_t lr_decay_every = 0;            // step: steps between decays
  double lr_decay = 0.1;                 // step: factor of each decay
  // The rate's gain with the step's batch (common/adascale.h): none | adascale.
  std::string lr_scaling = "none";
  int64_t lr_scaling_base = 0;  // adascale: the batch (trips) --lr is tuned for; 0: --batch_size
  // adascale in local mode: each micro-batch is cut into the slices of this many workers, the
  // pieces whose spread measures the noise (a sync job's pieces are its workers' slices), so
  // that local training equals a sync job of that many workers.
  int64_t lr_scaling_workers = 2;
  // The geometry the train reports' gradient noise is measured in (worker/step_noise.h):
  // optimizer (Adam's preconditioned gradient with adam, the plain one otherwise) | plain.
  std::string noise_geometry = "optimizer";

  // Throws std::invalid_argument naming the bad field. Every field is checked, also those the
  // named optimizer does not use: lr finite > 0, momentum/beta1/beta2 in [0, 1), eps finite >= 0.
  void Validate() const;
  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(name), CEREAL_NVP(lr), CEREAL_NVP(momentum), CEREAL_NVP(beta1), CEREAL_NVP(beta2),
       CEREAL_NVP(eps), CEREAL_NVP(clip_norm), CEREAL_NVP(lr_schedule), CEREAL_NVP(warmup_steps),
       CEREAL_NVP(lr_steps), CEREAL_NVP(lr_decay_every), CEREAL_NVP(lr_decay),
       CEREAL_NVP(lr_scaling), CEREAL_NVP(lr_scaling_base), CEREAL_NVP(lr_scaling_workers),
       CEREAL_NVP(noise_geometry));
  }
};

struct TrainConfig {
  int64_t batch_size = 64;  // trips per optimizer step (the global batch)
  int64_t epochs = 10;
  int64_t max_steps = 0;       // stop after this many steps; 0 = no limit
  uint64_t seed = 1;           // weights and data order
  int64_t shuffle_window = 0;  // trips shuffled together each epoch (0: all; data/batcher.h)
  int64_t log_every = 10;      // steps between train reports
  EvalScheduleConfig eval;
  double max_train_s = 0;  // time budget: training stops soon after this (0: no budget)
  int64_t patience = 0;    // stop after this many evaluations without a lower MAPE (0: never)
  int64_t eval_batch_size = 256;
  double progress_s = 5;       // seconds between progress lines
  int32_t threads = 1;         // LibTorch intra-op threads per process
  std::string device = "cpu";  // where a worker trains and evaluates: cpu | cuda | cuda:N
  bool deterministic = false;  // LibTorch's deterministic algorithms (and cuDNN's)
  // Test knobs, emulated slower machines: worker `slowdown_worker` sleeps slowdown_percent of
  // its compute time per step, or worker i sleeps slowdowns[i] % (each worker its own). With
  // slowdown_on_s > 0 a slowdown holds only for the first slowdown_on_s of every
  // slowdown_period_s training seconds (interference that comes and goes).
  int64_t slowdown_percent = 0;
  int32_t slowdown_worker = -1;
  std::vector<int64_t> slowdowns;
  double slowdown_on_s = 0, slowdown_period_s = 0;
  // The percentage worker `worker` sleeps while slowed.
  int64_t SlowdownOf(int worker) const;

  // Throws std::invalid_argument naming the flag of the first bad value.
  void Validate() const;

  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(batch_size), CEREAL_NVP(epochs), CEREAL_NVP(max_steps), CEREAL_NVP(seed),
       CEREAL_NVP(shuffle_window), CEREAL_NVP(log_every), CEREAL_NVP(eval), CEREAL_NVP(max_train_s),
       CEREAL_NVP(eval_batch_size), CEREAL_NVP(progress_s), CEREAL_NVP(threads), CEREAL_NVP(device),
       CEREAL_NVP(deterministic), CEREAL_NVP(slowdown_percent), CEREAL_NVP(slowdown_worker),
       CEREAL_NVP(patience), CEREAL_NVP(slowdowns), CEREAL_NVP(slowdown_on_s),
       CEREAL_NVP(slowdown_period_s));
  }
};

// How the workers' gradients are combined.
struct ExchangeConfig {
  Mode mode = Mode::kSync;
  int64_t accumulation = 1;            // micro-batches per worker step (a policy may change it)
  int64_t first_worker_batch = -1;     // trips of each global batch for worker 0; -1: even split
  int64_t staleness = 2;               // ssp: the slowest clock may lag this many steps
  std::string allreduce = "ring";      // ring modes: ring (ours) | mpi (MPI_Allreduce)
  std::string ring_transport = "tcp";  // our ring's links: tcp (rebuilt after a loss) | mpi
  double bucket_mb = 25;               // ring: gradient bucket size; <= 0: one bucket
  int64_t check_every = 20;            // ring modes: steps between parameter identity checks
  int64_t average_every = 10;          // average: local steps between parameter averages
  bool sparse_rows = true;             // PS modes: embedding rows a step uses, not whole tables
  std::string wire_dtype = "fp32";     // PS modes: fp32 | bf16 values in pushes and pulls
  double push_bucket_mb = 0.25;        // sync: push buckets during backward (0: after it)
  bool pull_overlap = true;            // sync: forward starts on the first modules pulled
  bool balance_links = true;           // PS modes: server shares by the bytes on each host's link
  std::string slicing = "even";        // even (by count) | balanced (by estimated cost)
  // Sync: the slices the global batch is cut into, whatever the number of workers (each computes
  // one or more, each slice's gradient on its own; the servers sum them in slice order, so the
  // model does not depend on the number of workers). 0: one per worker. The scheduler sends the
  // resolved number.
  int64_t slices = 0;

  // Throws std::invalid_argument naming the flag of the first bad value.
  void Validate() const;

  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(mode), CEREAL_NVP(accumulation), CEREAL_NVP(first_worker_batch),
       CEREAL_NVP(slices), CEREAL_NVP(staleness), CEREAL_NVP(allreduce), CEREAL_NVP(bucket_mb),
       CEREAL_NVP(check_every), CEREAL_NVP(average_every), CEREAL_NVP(sparse_rows),
       CEREAL_NVP(wire_dtype), CEREAL_NVP(slicing), CEREAL_NVP(push_bucket_mb),
       CEREAL_NVP(pull_overlap), CEREAL_NVP(balance_links), CEREAL_NVP(ring_transport));
  }
};

// Who chooses each worker's accumulation while the job runs (the scheduler).
struct PolicyConfig {
  std::string name = "fixed";  // fixed | speed | goodput | ppo
  std::string scope = "job";   // ppo: job (the global batch, split by speed) | worker
  int64_t accumulation_min = 1, accumulation_max = 16;
  std::string policy_in, policy_out;  // ppo: start from / save to
  bool learn = true;                  // ppo: update the policy during the job
  int32_t rollout = 32;               // ppo: decisions per update
  int32_t hidden = 64, epochs = 4, minibatch = 32;
  double lr = 3e-4, gamma = 0.9, lambda = 0.95, clip = 0.2, value_coef = 0.5, entropy = 0.01;
  uint64_t seed = 1;

  // Throws std::invalid_argument naming the flag of the first bad value.
  void Validate() const;

  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(name), CEREAL_NVP(scope), CEREAL_NVP(accumulation_min),
       CEREAL_NVP(accumulation_max), CEREAL_NVP(policy_in), CEREAL_NVP(policy_out),
       CEREAL_NVP(learn), CEREAL_NVP(rollout), CEREAL_NVP(hidden), CEREAL_NVP(epochs),
       CEREAL_NVP(minibatch), CEREAL_NVP(lr), CEREAL_NVP(gamma), CEREAL_NVP(lambda),
       CEREAL_NVP(clip), CEREAL_NVP(value_coef), CEREAL_NVP(entropy), CEREAL_NVP(seed));
  }
};

struct OutputConfig {
  std::string out_dir = "out";
  int64_t checkpoint_every = 0;  // server versions between checkpoints (0: never)
  std::string checkpoint_dir;    // default: out_dir/checkpoints
  std::string resume;            // resume from the newest complete checkpoint here
  std::string trace;             // the job's timeline file (empty: off)
  bool keep_best = true;         // model.pt: the best evaluated weights (model_last.pt: the last)

  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(out_dir), CEREAL_NVP(checkpoint_every), CEREAL_NVP(checkpoint_dir),
       CEREAL_NVP(resume), CEREAL_NVP(trace), CEREAL_NVP(keep_best));
  }
};

// How a node reaches and watches the others.
struct ClusterConfig {
  double timeout_s = 30;    // bound of every blocking wait
  double heartbeat_s = 1;   // between heartbeats
  double silence_s = 0;     // a node silent this long fails the job (0: 5 x heartbeat_s)
  int32_t replicas = 1;     // PS modes: servers holding each key range (2: a server may be lost)
  int32_t min_workers = 0;  // sync/async/SSP: below this many live workers training pauses (0: off)

  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(timeout_s), CEREAL_NVP(heartbeat_s), CEREAL_NVP(silence_s), CEREAL_NVP(replicas),
       CEREAL_NVP(min_workers));
  }
};

struct JobConfig {
  DataConfig data;
  ModelConfig model;
  OptimizerConfig optimizer;
  TrainConfig train;
  ExchangeConfig exchange;
  PolicyConfig policy;
  OutputConfig output;
  ClusterConfig cluster;

  // Throws std::invalid_argument naming the first bad field (by its flag).
  void Validate() const;
  // Every field, by part, as indented JSON: what out_dir/config.json holds.
  std::string ToJson() const;
  // The inverse of ToJson. Throws std::invalid_argument if `json` is not one.
  static JobConfig FromJson(const std::string& json);
  // The most trips one worker's push can sum: the global batch times the largest accumulation
  // the job allows (servers refuse pushes that claim more).
  int64_t MaxPushTrips() const;

  template <class A>
  void serialize(A& ar) {
    ar(CEREAL_NVP(data), CEREAL_NVP(model), CEREAL_NVP(optimizer), CEREAL_NVP(train),
       CEREAL_NVP(exchange), CEREAL_NVP(policy), CEREAL_NVP(output), CEREAL_NVP(cluster));
  }
};

// Optimizer steps of a run over `num_trips` trips: epochs x ceil(num_trips / batch_size),
// capped by max_steps when set (max_steps alone when epochs < 1).
int64_t TotalSteps(const TrainConfig& c, size_t num_trips);
// Throws std::invalid_argument if a step would need more trips than training has (a batch of
// 100,000 on 1,000 trips would train full-batch while the summary said 100,000).
void CheckBatchFits(const TrainConfig& c, size_t num_trips);
// What a job resumed from a checkpoint must share with the job that wrote it (the model's
// shape, the optimizer whose state the servers restore, the mode, the replicas), as one line
// per difference: "--final_fc_size 64 (the checkpoint's job: 128)". Empty if nothing differs.
std::vector<std::string> ResumeMismatches(const JobConfig& checkpoint, const JobConfig& now);

}  // namespace tteps
