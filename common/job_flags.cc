#include "common/job_flags.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <stdexcept>

#include "common/shipped_files.h"
#include "common/split_list.h"

// Data
DEFINE_string(train_data, tteps::ShippedFile("data/chengdu/trajectories.jsonl"),
              "training trips: DeepTTE JSON lines (several files separated by commas) or a trip "
              "store made by tteps-pack (a directory)");
DEFINE_string(eval_data, "",
              "evaluation trips (a JSON-lines file or a store); if empty, held out of "
              "--train_data by --split");
DEFINE_double(eval_fraction, 0.1667,
              "fraction of --train_data held out for evaluation by --split random or tail");
DEFINE_string(split, "auto",
              "how the evaluation trips are held out of --train_data: day (the latest "
              "--eval_days days by dateID, or --eval_dates: a model is used on days it never "
              "saw), random (--eval_fraction, seeded by --split_seed), tail (the last "
              "--eval_fraction of the trips) or auto: day where the data holds at least two "
              "dates, else random. --eval_fraction 0 holds out nothing (but for --split day)");
DEFINE_int64(eval_days, 1, "--split day: how many of the latest days are held out");
DEFINE_string(eval_dates, "",
              "--split day: the dateIDs held out, comma-separated (instead of the latest days)");
DEFINE_uint64(split_seed, 1, "seed of the random train/eval split");
DEFINE_string(bad_records, "fail",
              "a malformed record: fail (stop, naming file, line and field) or skip (count it, "
              "report the first line numbers, go on)");
DEFINE_int64(max_points, 2000,
             "the most GPS points a trip may have; a longer one is a bad record (0: no limit; the "
             "shipped sample's longest has 116)");
DEFINE_double(max_trip_s, 86400, "the longest travel time (`time`, seconds) a trip may have");
DEFINE_double(max_trip_km, 1000, "the longest distance (`dist`, km) a trip may have");
DEFINE_string(stats, "",
              "normalisation statistics (the stats.json format; tteps-stats makes one). Empty: "
              "those of every trip of --train_data (computed as the data is read; a store's "
              "own STORE/stats.json, computed by tteps-pack the same way). The model file "
              "keeps the statistics it was trained with");

// Model
DEFINE_int64(kernel_size, 3, "Geo-Conv kernel size (points per local path)");
DEFINE_int64(num_filter, 32, "Geo-Conv filters");
DEFINE_string(pooling, "attention", "pooling of the LSTM outputs: attention or mean");
DEFINE_double(local_loss_weight, 0.1,
              "weight w of the local-path loss (the paper's alpha): (1-w) entire + w local");
DEFINE_int64(num_final_fcs, 3, "residual layers of the entire estimator");
DEFINE_int64(final_fc_size, 128, "width of the entire estimator");

// Optimizer
DEFINE_string(optimizer, "adam", "adam, sgd or momentum");
DEFINE_double(lr, 1e-3, "learning rate");
DEFINE_double(momentum, 0.9, "momentum for --optimizer=momentum");
DEFINE_string(lr_schedule, "constant",
              "the learning rate per step: constant, cosine (from --lr down to 0 over "
              "--lr_steps) or step (x --lr_decay every --lr_decay_every steps), after a linear "
              "--warmup_steps; the same on the servers and in local training");
DEFINE_int64(warmup_steps, 0, "steps of linear learning-rate warm-up from lr / N to lr");
DEFINE_int64(lr_steps, 0, "--lr_schedule cosine: steps to reach 0 (0: the job's planned steps)");
DEFINE_int64(lr_decay_every, 0, "--lr_schedule step: steps between decays");
DEFINE_double(lr_decay, 0.1, "--lr_schedule step: factor of each decay");
DEFINE_string(lr_scaling, "none",
              "none | adascale: each step's rate times AdaScale's gain for its batch against "
              "--lr_scaling_base, from the gradient noise measured between the step's slices and "
              "micro-batches (square root of it with adam); sync and local modes");
DEFINE_int64(lr_scaling_base, 0,
             "--lr_scaling adascale: the batch --lr is tuned for (0: --batch_size)");
DEFINE_string(noise_geometry, "optimizer",
              "the gradient noise of the train reports (and the policies that read it) in the "
              "optimizer's geometry (Adam: its preconditioned gradient, as Pollux) or plain");
DEFINE_int64(lr_scaling_workers, 2,
             "--lr_scaling adascale, local mode: measure the noise between the slices of this many "
             "workers (to equal a sync job of that many)");
DEFINE_double(clip_norm, 0,
              "clip the gradient of each step to this global L2 norm (0: off). sync: the norm "
              "of the aggregate, gathered from every shard through the scheduler; async / ssp: "
              "the norm of each push, computed by its worker");

// Training
DEFINE_int64(batch_size, 64, "trips per optimizer step (the global batch in distributed modes)");
DEFINE_int64(epochs, 10, "epochs over the training trips");
DEFINE_int64(max_steps, 0, "stop after this many optimizer steps (0: run all epochs)");
DEFINE_uint64(seed, 1, "seed of weight initialisation and data order");
DEFINE_int64(shuffle_window, 0,
             "trips shuffled together each epoch (0: all of them). For a store larger than "
             "memory: blocks of window/8 trips are shuffled, then the trips within each 8 blocks, "
             "so reads stay mostly sequential");
DEFINE_int64(log_every, 10, "steps between training metrics lines");
DEFINE_int64(eval_every, 0, "steps between evaluations (0: after every epoch)");
DEFINE_double(eval_every_s, 0,
              "seconds between evaluations (0: use --eval_every); for curves against wall time");
DEFINE_double(max_train_s, 0,
              "time budget in seconds: training stops at the first step after it on which all "
              "workers can agree (0: none); --epochs / --max_steps still cap the run");
DEFINE_int64(patience, 0,
             "early stopping: training stops (every worker after the same step) once this many "
             "evaluations in a row found no lower MAPE than the best so far (0: never)");
DEFINE_int64(eval_batch_size, 256, "trips per evaluation batch");
DEFINE_double(progress_s, 5, "seconds between progress lines");
DEFINE_int32(threads, 1, "LibTorch intra-op threads in each process");
DEFINE_string(device, "cpu",
              "where workers (and the evaluation) train: cpu, cuda (worker i of a host takes GPU "
              "local_rank % GPUs) or cuda:N; fails at once where CUDA is not available");
DEFINE_bool(deterministic, false,
            "LibTorch's deterministic algorithms and cuDNN's deterministic mode (for the "
            "equivalence of runs on GPUs)");
DEFINE_int64(slowdown, 0,
             "test knob: worker --slowdown_worker sleeps this percentage of its compute time "
             "after each step, to emulate a slower machine (the sleep counts as compute time)");
DEFINE_int32(slowdown_worker, -1, "the worker slowed by --slowdown (-1: none)");
DEFINE_string(slowdowns, "",
              "test knob: every worker's slowdown percentage, comma-separated (0,0,100,200: "
              "speeds 1, 1, 1/2, 1/3); instead of --slowdown and --slowdown_worker");
DEFINE_string(slowdown_schedule, "",
              "test knob, ON/PERIOD in seconds (e.g. 10/20): the slowdowns hold only for the "
              "first ON seconds of every PERIOD seconds of training (interference that comes "
              "and goes); empty: always");

// Exchange
DEFINE_int64(accumulation, 1, "micro-batches each worker accumulates per step");
DEFINE_int64(first_worker_batch, -1,
             "trips of each global batch for worker 0, the rest split evenly over the others "
             "(-1: even split)");
DEFINE_int64(
    staleness, 2,
    "ssp mode: a worker at clock c may pull once every worker's clock is >= c - staleness");
DEFINE_string(allreduce, "ring",
              "ring modes: ring (our ring allreduce) or mpi (MPI_Allreduce, the vendor baseline)");
DEFINE_string(ring_transport, "tcp",
              "ring modes, --allreduce ring: the links between ring neighbours, tcp (ZeroMQ; "
              "the ring is rebuilt without a lost worker and the job goes on) or mpi (MPI "
              "point-to-point; a lost worker ends the job)");
DEFINE_double(bucket_mb, 25,
              "ring mode: gradient bucket size in MB; a bucket is reduced while backward computes "
              "the rest (<= 0: one bucket)");
DEFINE_int64(check_every, 20,
             "ring modes: steps between checks that all workers hold bitwise-identical "
             "parameters (a mismatch fails the job)");
DEFINE_int64(average_every, 10, "average mode: local optimizer steps between parameter averages");
DEFINE_double(push_bucket_mb, 0.25,
              "sync mode: push the gradient in buckets of this many MB while the last "
              "micro-batch's backward computes the rest, as DDP overlaps its allreduce (0: one "
              "push after backward)");
DEFINE_bool(pull_overlap, true,
            "sync mode: the pull of the next step's weights arrives module by module in the "
            "order the forward pass reads them, and the forward starts on the first ones while "
            "the rest arrive (false: it starts once all have)");
DEFINE_bool(balance_links, true,
            "sync, async, ssp: cut the servers' key ranges so that every server host's link "
            "carries about the same bytes (a server's share shrinks with the workers on other "
            "hosts it serves); on one host, or false: equal shares of the bytes");
DEFINE_int64(slices, 0,
             "sync: cut the global batch into this many slices whatever the number of workers "
             "(each worker computes one or more, the servers sum them in slice order: the model "
             "does not depend on the number of workers); 0: one per worker");
DEFINE_string(slicing, "even",
              "how a global batch is cut over the workers: even (equal trip counts) or balanced "
              "(contiguous parts of even estimated compute: length x (trips + 16)); "
              "--first_worker_batch overrides both");
DEFINE_string(wire_dtype, "fp32",
              "sync, async, ssp: fp32, or bf16 (bfloat16 gradients and weights in pushes and "
              "pulls, half the bytes; servers and models keep fp32)");
DEFINE_bool(sparse_rows, true,
            "sync, async, ssp: push and pull only the embedding rows a step's trips use (the "
            "driver and start-time tables), not the whole tables; the model is the same");

// Output
DEFINE_bool(keep_best, true,
            "model.pt holds the weights of the best evaluation on the held-out trips (lowest "
            "MAPE; summary.json's best_eval), model_last.pt the last weights; false: model.pt "
            "holds the last too");
DEFINE_int64(checkpoint_every, 0,
             "each server writes a checkpoint of its shard every this many versions (0: never)");
DEFINE_string(checkpoint_dir, "", "where checkpoints go (default: <out_dir>/checkpoints)");
DEFINE_string(resume, "",
              "resume from the newest checkpoint in this directory that every server has "
              "written: values, optimizer state, version and worker clocks");
DEFINE_string(trace, "",
              "write a timeline of the job to this file (Chrome trace-event JSON: open it in "
              "ui.perfetto.dev or chrome://tracing); the scheduler collects every process's spans");

namespace tteps {
namespace {

std::vector<int64_t> ParseDates(const std::string& text) {
  std::vector<int64_t> dates;
  for (const std::string& d : SplitList(text)) {
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(d, &used);
    } catch (const std::exception&) {
    }
    if (used != d.size() || v < 0) {
      throw std::invalid_argument("--eval_dates: '" + d + "' is not a dateID");
    }
    dates.push_back(v);
  }
  return dates;
}

// Sets a field from its flag: every flag, or only those set on this command line.
struct FlagSetter {
  bool only_explicit;
  template <class Field, class Value>
  void operator()(const char* name, Field* field, const Value& value) const {
    if (!only_explicit || !gflags::GetCommandLineFlagInfoOrDie(name).is_default) *field = value;
  }
};
#define TTEPS_SET(field, flag) set(#flag, &c->field, FLAGS_##flag)

void FillData(const FlagSetter& set, DataConfig* c) {
  set("train_data", &c->train_files, SplitList(FLAGS_train_data));
  TTEPS_SET(eval_file, eval_data);
  TTEPS_SET(eval_fraction, eval_fraction);
  TTEPS_SET(split, split);
  TTEPS_SET(split_seed, split_seed);
  TTEPS_SET(bad_records, bad_records);
  TTEPS_SET(eval_days, eval_days);
  TTEPS_SET(max_points, max_points);
  TTEPS_SET(max_trip_s, max_trip_s);
  TTEPS_SET(max_trip_km, max_trip_km);
  TTEPS_SET(stats, stats);
  set("eval_dates", &c->eval_dates, ParseDates(FLAGS_eval_dates));
}

void FillModel(const FlagSetter& set, ModelConfig* c) {
  TTEPS_SET(kernel_size, kernel_size);
  TTEPS_SET(num_filter, num_filter);
  TTEPS_SET(pooling, pooling);
  TTEPS_SET(local_loss_weight, local_loss_weight);
  TTEPS_SET(num_final_fcs, num_final_fcs);
  TTEPS_SET(final_fc_size, final_fc_size);
}

void FillOptimizer(const FlagSetter& set, OptimizerConfig* c) {
  TTEPS_SET(name, optimizer);
  TTEPS_SET(lr, lr);
  TTEPS_SET(momentum, momentum);
  TTEPS_SET(clip_norm, clip_norm);
  TTEPS_SET(lr_schedule, lr_schedule);
  TTEPS_SET(warmup_steps, warmup_steps);
  TTEPS_SET(lr_steps, lr_steps);
  TTEPS_SET(lr_decay_every, lr_decay_every);
  TTEPS_SET(lr_decay, lr_decay);
  TTEPS_SET(lr_scaling, lr_scaling);
  TTEPS_SET(lr_scaling_base, lr_scaling_base);
  TTEPS_SET(lr_scaling_workers, lr_scaling_workers);
  TTEPS_SET(noise_geometry, noise_geometry);
}

void FillTrain(const FlagSetter& set, TrainConfig* c) {
  TTEPS_SET(batch_size, batch_size);
  TTEPS_SET(epochs, epochs);
  TTEPS_SET(max_steps, max_steps);
  TTEPS_SET(seed, seed);
  TTEPS_SET(shuffle_window, shuffle_window);
  TTEPS_SET(log_every, log_every);
  TTEPS_SET(eval.every_steps, eval_every);
  TTEPS_SET(eval.every_s, eval_every_s);
  TTEPS_SET(max_train_s, max_train_s);
  TTEPS_SET(patience, patience);
  TTEPS_SET(eval_batch_size, eval_batch_size);
  TTEPS_SET(progress_s, progress_s);
  TTEPS_SET(threads, threads);
  TTEPS_SET(device, device);
  TTEPS_SET(deterministic, deterministic);
  TTEPS_SET(slowdown_percent, slowdown);
  TTEPS_SET(slowdown_worker, slowdown_worker);
  set("slowdowns", &c->slowdowns, SplitInts(FLAGS_slowdowns));
  std::string schedule = FLAGS_slowdown_schedule;
  std::replace(schedule.begin(), schedule.end(), '/', ',');
  const std::vector<double> on_period = SplitDoubles(schedule);
  if (!on_period.empty() && on_period.size() != 2) {
    throw std::invalid_argument("--slowdown_schedule must be ON/PERIOD (seconds), not '" +
                                FLAGS_slowdown_schedule + "'");
  }
  set("slowdown_schedule", &c->slowdown_on_s, on_period.empty() ? 0.0 : on_period[0]);
  set("slowdown_schedule", &c->slowdown_period_s, on_period.empty() ? 0.0 : on_period[1]);
}

void FillExchange(const FlagSetter& set, ExchangeConfig* c) {
  TTEPS_SET(accumulation, accumulation);
  TTEPS_SET(first_worker_batch, first_worker_batch);
  TTEPS_SET(staleness, staleness);
  TTEPS_SET(allreduce, allreduce);
  TTEPS_SET(ring_transport, ring_transport);
  TTEPS_SET(bucket_mb, bucket_mb);
  TTEPS_SET(check_every, check_every);
  TTEPS_SET(average_every, average_every);
  TTEPS_SET(sparse_rows, sparse_rows);
  TTEPS_SET(wire_dtype, wire_dtype);
  TTEPS_SET(slicing, slicing);
  TTEPS_SET(slices, slices);
  TTEPS_SET(push_bucket_mb, push_bucket_mb);
  TTEPS_SET(pull_overlap, pull_overlap);
  TTEPS_SET(balance_links, balance_links);
}

void FillOutput(const FlagSetter& set, OutputConfig* c) {
  TTEPS_SET(checkpoint_every, checkpoint_every);
  TTEPS_SET(keep_best, keep_best);
  TTEPS_SET(checkpoint_dir, checkpoint_dir);
  TTEPS_SET(resume, resume);
  TTEPS_SET(trace, trace);
}
#undef TTEPS_SET

// Copies every flag into its field, or only the flags set on this command line.
void Fill(JobConfig* c, bool only_explicit) {
  const FlagSetter set{only_explicit};
  FillData(set, &c->data);
  FillModel(set, &c->model);
  FillOptimizer(set, &c->optimizer);
  FillTrain(set, &c->train);
  FillExchange(set, &c->exchange);
  FillOutput(set, &c->output);
}

}  // namespace

JobConfig JobConfigFromFlags() {
  JobConfig c;
  Fill(&c, false);
  return c;
}

void ApplyOwnFlags(JobConfig* config) { Fill(config, true); }

std::string OwnTrainData() {
  if (gflags::GetCommandLineFlagInfoOrDie("train_data").is_default) return "";
  const auto files = SplitList(FLAGS_train_data);
  return files.empty() ? "" : files.front();
}

}  // namespace tteps
