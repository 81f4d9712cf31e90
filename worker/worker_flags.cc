#include "worker/worker_flags.h"

#include <gflags/gflags.h>

#include "server/server_flags.h"  // --optimizer, --lr, --momentum

// Data
DEFINE_string(train_data, TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl",
              "training trips, DeepTTE JSON lines; several files separated by commas");
DEFINE_string(eval_data, "", "evaluation trips; if empty, --eval_fraction of --train_data");
DEFINE_double(eval_fraction, 0.1667, "fraction of --train_data held out for evaluation");
DEFINE_string(split, "random",
              "how --eval_fraction is held out: random (seeded by --split_seed) or tail "
              "(the last trips of the files)");
DEFINE_uint64(split_seed, 1, "seed of the random train/eval split");
DEFINE_string(bad_records, "fail",
              "a malformed record: fail (stop, naming file, line and field) or skip (count it, "
              "report the first line numbers, go on)");
DEFINE_string(stats, TTEPS_SOURCE_DIR "/data/chengdu/stats.json",
              "normalisation statistics (stats.json format; tteps-stats makes one)");

// Model
DEFINE_int64(kernel_size, 3, "Geo-Conv kernel size (points per local path)");
DEFINE_int64(num_filter, 32, "Geo-Conv filters");
DEFINE_string(pooling, "attention", "pooling of the LSTM outputs: attention or mean");
DEFINE_double(alpha, 0.1, "weight of the local-path loss: (1-alpha) entire + alpha local");
DEFINE_int64(num_final_fcs, 3, "residual layers of the entire estimator");
DEFINE_int64(final_fc_size, 128, "width of the entire estimator");

// Training
DEFINE_int64(batch_size, 64, "trips per optimizer step (the global batch in distributed modes)");
DEFINE_int64(epochs, 10, "epochs over the training trips");
DEFINE_int64(max_steps, 0, "stop after this many optimizer steps (0: run all epochs)");
DEFINE_uint64(seed, 1, "seed of weight initialisation and data order");
DEFINE_int64(log_every, 10, "steps between training metrics lines");
DEFINE_int64(eval_every, 0, "steps between evaluations (0: after every epoch)");
DEFINE_double(eval_every_s, 0,
              "seconds between evaluations (0: use --eval_every); for curves against wall time");
DEFINE_double(max_train_s, 0,
              "time budget in seconds: training stops at the first step after it on which all "
              "workers can agree (0: none); --epochs / --max_steps still cap the run");
DEFINE_int64(eval_batch_size, 256, "trips per evaluation batch");
DEFINE_double(progress_s, 5, "seconds between progress lines on stderr");
DEFINE_int32(threads, 1, "LibTorch intra-op threads in each process");

// Distributed workers
DEFINE_int64(accumulation, 1, "micro-batches each worker accumulates per push (alpha)");
DEFINE_int64(first_worker_batch, -1,
             "trips of each global batch for worker 0, the rest split evenly over the others "
             "(-1: even split)");
DEFINE_int64(slowdown, 0,
             "test knob: worker --slowdown_worker sleeps this percentage of its compute time "
             "after each step, to emulate a slower machine (the sleep counts as compute time)");
DEFINE_int32(slowdown_worker, -1, "the worker slowed by --slowdown (-1: none)");

// Ring modes
DEFINE_string(allreduce, "ring",
              "ring modes: ring (our ring allreduce) or mpi (MPI_Allreduce, the vendor baseline)");
DEFINE_double(bucket_mb, 25,
              "ring mode: gradient bucket size in MB; a bucket is reduced while backward computes "
              "the rest (<= 0: one bucket)");
DEFINE_int64(check_every, 20,
             "ring modes: steps between checks that all workers hold bitwise-identical "
             "parameters (a mismatch fails the job)");
DEFINE_int64(average_every, 10, "average mode: local optimizer steps between parameter averages");

namespace tteps {

DatasetOptions DatasetOptionsFromFlags() {
  DatasetOptions o;
  o.train_files = SplitList(FLAGS_train_data);
  o.eval_file = FLAGS_eval_data;
  o.eval_fraction = FLAGS_eval_fraction;
  o.split = FLAGS_split;
  o.split_seed = FLAGS_split_seed;
  o.read.bad_records = data::ParseBadRecordPolicy(FLAGS_bad_records);
  o.read.min_points = static_cast<size_t>(std::max<int64_t>(1, FLAGS_kernel_size));
  return o;
}

deeptte::ModelConfig ModelConfigFromFlags() {
  deeptte::ModelConfig c;
  c.kernel_size = FLAGS_kernel_size;
  c.num_filter = FLAGS_num_filter;
  c.pooling = FLAGS_pooling;
  c.alpha = FLAGS_alpha;
  c.num_final_fcs = FLAGS_num_final_fcs;
  c.final_fc_size = FLAGS_final_fc_size;
  c.Validate();
  return c;
}

TrainOptions TrainOptionsFromFlags() {
  TrainOptions o;
  o.optimizer = FLAGS_optimizer;
  o.lr = FLAGS_lr;
  o.momentum = FLAGS_momentum;
  o.batch_size = FLAGS_batch_size;
  o.epochs = FLAGS_epochs;
  o.max_steps = FLAGS_max_steps;
  o.seed = FLAGS_seed;
  o.log_every = FLAGS_log_every;
  o.eval_every = FLAGS_eval_every;
  o.eval_every_s = FLAGS_eval_every_s;
  o.max_train_s = FLAGS_max_train_s;
  o.eval_batch_size = FLAGS_eval_batch_size;
  o.progress_s = FLAGS_progress_s;
  o.clip_norm = FLAGS_clip_norm;
  o.Validate();
  return o;
}

RingOptions RingOptionsFromFlags() {
  RingOptions o;
  o.allreduce = FLAGS_allreduce;
  o.bucket_mb = FLAGS_bucket_mb;
  o.check_every = FLAGS_check_every;
  o.average_every = FLAGS_average_every;
  o.Validate();
  return o;
}

}  // namespace tteps
