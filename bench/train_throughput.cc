// bench/train_throughput: single-process training throughput (trips/s) of DeepTTE at given batch
// sizes, on the shipped sample (or --data). Each size: --warmup steps, then --steps timed steps
// of forward + backward + optimizer, the same code the local trainer runs.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include "common/init.h"
#include "common/json_writer.h"
#include "common/split_list.h"
#include "worker/data/batcher.h"
#include "worker/data/norm_stats.h"
#include "worker/data/trip_reader.h"
#include "worker/dataset.h"
#include "worker/gradient_step.h"

DEFINE_string(data, TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl", "trips to train on");
DEFINE_string(stats, TTEPS_SOURCE_DIR "/data/chengdu/stats.json", "normalisation stats");
DEFINE_string(batch_sizes, "64,400", "batch sizes to measure, comma separated");
DEFINE_int32(steps, 20, "timed steps per batch size");
DEFINE_int32(warmup, 3, "untimed steps per batch size");
DEFINE_int32(threads, 1, "LibTorch intra-op threads");
DEFINE_string(optimizer, "adam", "adam, sgd or momentum");

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "bench/train_throughput: DeepTTE training throughput in one process.\n"
                     "Prints one JSON line per batch size.");
  torch::set_num_threads(FLAGS_threads);
  using namespace tteps;
  auto trips = data::ReadTrips(FLAGS_data, data::ReadOptions{});
  auto stats = data::LoadNormStats(FLAGS_stats);
  std::vector<size_t> lengths;
  for (const auto& t : trips) lengths.push_back(t.length());

  for (const auto& bs_text : SplitList(FLAGS_batch_sizes)) {
    const int64_t bs = std::stoll(bs_text);
    torch::manual_seed(1);
    deeptte::DeepTTE model(deeptte::ModelConfig{}, stats);
    OptimizerConfig opts;
    opts.name = FLAGS_optimizer;
    auto optimizer = MakeOptimizer(opts, model->parameters());
    int64_t epoch = 0, trips_done = 0, points = 0;
    auto batches = data::EpochBatches(lengths, bs, 1, epoch);
    size_t next = 0;
    double seconds = 0;
    for (int step = 0; step < FLAGS_warmup + FLAGS_steps; ++step) {
      if (next == batches.size()) {
        batches = data::EpochBatches(lengths, bs, 1, ++epoch);
        next = 0;
      }
      const auto& batch = batches[next++];
      const auto t0 = std::chrono::steady_clock::now();
      optimizer->zero_grad();
      auto s = AccumulateGradients(*model, trips, batch);
      ScaleGradients(*model, 1.0 / s.trips);
      optimizer->step();
      const double dt =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (step >= FLAGS_warmup) {
        seconds += dt;
        trips_done += s.trips;
        for (size_t i : batch) points += trips[i].length();
      }
    }
    std::printf("%s\n", JsonObject()
                            .Add("bench", "train_throughput")
                            .Add("batch_size", bs)
                            .Add("threads", FLAGS_threads)
                            .Add("optimizer", FLAGS_optimizer)
                            .Add("steps", FLAGS_steps)
                            .Add("trips_per_s", trips_done / seconds)
                            .Add("ms_per_step", 1e3 * seconds / FLAGS_steps)
                            .Add("mean_points_per_trip", double(points) / trips_done)
                            .str()
                            .c_str());
    std::fflush(stdout);
  }
  return 0;
}
