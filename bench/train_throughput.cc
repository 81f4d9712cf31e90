// bench/train_throughput: single-process training throughput (trips/s) of DeepTTE at given batch
// sizes, on the shipped sample (or --data). Each size: --warmup steps, then --steps timed steps
// of forward + backward + optimizer, the same code the local trainer runs. --pytorch also runs
// the PyTorch baseline (bench/baselines/deeptte_ddp.py, one process; TTEPS_PYTHON names its
// interpreter) on the same device, data and steps, and prints the ratio.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "common/init.h"
#include "common/json_writer.h"
#include "common/split_list.h"
#include "model/data/batcher.h"
#include "model/data/norm_stats.h"
#include "model/data/trip_reader.h"
#include "model/dataset.h"
#include "model/deeptte/compute_path.h"
#include "model/device.h"
#include "worker/gradient_step.h"

DEFINE_string(data, TTEPS_SOURCE_DIR "/data/chengdu/trajectories.jsonl",
              "trips to train on: a JSON-lines file or a trip store (tteps-pack)");
DEFINE_string(stats, TTEPS_SOURCE_DIR "/data/chengdu/stats.json", "normalisation stats");
DEFINE_string(batch_sizes, "64,400", "batch sizes to measure, comma separated");
DEFINE_int32(steps, 20, "timed steps per batch size");
DEFINE_int32(rounds, 1,
             "rounds over all batch sizes (tteps and PyTorch alternated on the CPU); the last "
             "lines give each size's medians");
DEFINE_int32(warmup, 3, "untimed steps per batch size");
DEFINE_int32(threads, 1, "LibTorch intra-op threads");
DEFINE_string(optimizer, "adam", "adam, sgd or momentum");
DEFINE_string(device, "cpu", "cpu, cuda or cuda:N");
DEFINE_string(pad_multiples, "1",
              "sequence pad multiples to measure each batch size with, comma separated (a GPU "
              "plans its kernels per shape; rounding the padded length up gives fewer shapes)");
DEFINE_bool(fused_cpu_kernels, true,
            "on the CPU, tteps's kernels (the LSTM, the attention pooling and the estimators of "
            "model/deeptte); false: LibTorch's operators");
DEFINE_int64(cpu_chunk, static_cast<int64_t>(tteps::kCpuChunkTrips),
             "on the CPU, trips per forward chunk of a batch (worker/gradient_step.h); 0: the "
             "whole batch in one chunk, as before");
DEFINE_string(trace, "",
              "write LibTorch's profile of each batch size's timed steps to TRACE.<batch>.json "
              "(Chrome trace format; bench/op_breakdown.py sums it per operator)");
DEFINE_string(cpu_path, "",
              "the CPU kernels to measure, for side-by-side runs on one machine: avx2 (tteps' "
              "AVX2 kernels, OpenBLAS's Haswell ones for LibTorch and the PyTorch baseline), "
              "avx512 (AVX-512, OpenBLAS's SkylakeX), or empty: as the environment says "
              "(TTEPS_MAX_CPU_ISA, OPENBLAS_CORETYPE). The bench restarts itself with those set");
DEFINE_bool(pytorch, false,
            "also run the PyTorch baseline (bench/baselines/deeptte_ddp.py; bench/setup.sh "
            "installs PyTorch) at each batch size and print tteps / PyTorch");

namespace {

// The baseline's trips/s over its steps after the warm-up, from its per-step metrics lines
// (each carries that step's trips/s); 0 if it failed.
double PyTorchTripsPerSecond(int64_t batch_size, const std::string& device) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/tteps_bench_pytorch";
  std::filesystem::remove_all(dir);
  std::ostringstream cmd;
  // Debian's interpreter (bench/setup.sh) unless TTEPS_PYTHON names another (a CUDA PyTorch).
  const char* python = std::getenv("TTEPS_PYTHON");
  cmd << (python ? python : "/usr/bin/python3") << " " << TTEPS_SOURCE_DIR
      << "/bench/baselines/deeptte_ddp.py --workers 1"
      << " --train_data " << FLAGS_data << " --stats " << FLAGS_stats << " --eval_fraction 0"
      << " --batch_size " << batch_size << " --max_steps " << FLAGS_warmup + FLAGS_steps
      << " --log_every 1 --threads " << FLAGS_threads << " --optimizer " << FLAGS_optimizer
      << " --device " << (device.rfind("cuda", 0) == 0 ? "cuda" : "cpu") << " --out_dir " << dir
      << " >" << dir << ".log 2>&1";
  if (std::system(cmd.str().c_str()) != 0) {
    LOG(ERROR) << "the PyTorch baseline failed: see " << dir << ".log";
    return 0;
  }
  std::ifstream metrics(dir + "/metrics.jsonl");
  std::string line;
  double seconds = 0;
  int64_t trips = 0, step = 0;
  while (std::getline(metrics, line)) {
    if (line.find("\"type\": \"train\"") == std::string::npos &&
        line.find("\"type\":\"train\"") == std::string::npos) {
      continue;
    }
    if (++step <= FLAGS_warmup) continue;
    const auto number = [&](const std::string& key) {
      const auto at = line.find("\"" + key + "\"");
      return at == std::string::npos ? 0.0
                                     : std::strtod(line.c_str() + line.find(':', at) + 1, nullptr);
    };
    const double n = number("trips"), tps = number("trips_per_s");
    if (n <= 0 || tps <= 0) continue;
    seconds += n / tps;
    trips += static_cast<int64_t>(n);
  }
  return seconds > 0 ? trips / seconds : 0;
}

// The timed steps of one batch size: trips trained, seconds and points over them.
struct Measured {
  int64_t trips = 0, points = 0;
  double seconds = 0, flop = 0;
};

// The floating-point operations (2 per multiply-add) of a training step's matrix products, which
// are nearly all of its arithmetic: per local path, the two LSTM layers' input and recurrent
// products, the local estimator's three layers, the geo-convolution and the attention; per
// trip, the entire estimator. Backward costs twice the forward (the inputs' and the weights'
// gradients). Element-wise work, the embeddings and the optimizer are left out.
double StepFlop(const tteps::data::Trips& trips, const std::vector<size_t>& batch) {
  using namespace tteps::deeptte;
  const tteps::ModelConfig c;
  const double h = kHiddenSize, gates = 4 * kHiddenSize;
  const double lstm_in = c.num_filter + 1 + kAttrSize;
  const double per_path = gates * (lstm_in + h) + gates * (h + h)  // the LSTM
                          + h * 64 + 64 * 32 + 32                  // local estimator
                          + 16 * c.kernel_size * c.num_filter      // geo-convolution
                          + 2 * h;                                 // attention
  const double w = c.final_fc_size;
  const double per_trip = (kAttrSize + h) * w + c.num_final_fcs * w * w + w + h * kAttrSize;
  double macs = 0;
  for (size_t i : batch) {
    macs +=
        per_path * (trips.length(i) - (c.kernel_size - 1)) + per_trip + 4 * 16 * trips.length(i);
  }
  return 2 * 3 * macs;
}

// One core's single-precision matrix-product rate with LibTorch's BLAS (GFLOP/s), the best of
// three products of two 2048 x 2048 matrices: the ceiling for the figures above.
double SgemmPeakGflops() {
  const auto a = torch::randn({2048, 2048}), b = torch::randn({2048, 2048});
  double best = 0;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto c = torch::mm(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) best = std::max(best, 2.0 * 2048 * 2048 * 2048 / s / 1e9);
  }
  return best;
}

Measured TimeSteps(const tteps::data::Trips& trips, const tteps::data::NormStats& stats,
                   const std::vector<size_t>& lengths, int64_t bs, int64_t pad_multiple,
                   torch::Device device) {
  using namespace tteps;
  torch::manual_seed(1);
  deeptte::DeepTTE model(deeptte::ModelConfig{}, stats);
  model->to(device);
  model->set_pad_multiple(pad_multiple);
  model->set_fused_cpu_kernels(FLAGS_fused_cpu_kernels);
  OptimizerConfig opts;
  opts.name = FLAGS_optimizer;
  auto optimizer = MakeOptimizer(opts, model->parameters());
  int64_t epoch = 0;
  auto batches = data::EpochBatches(lengths, bs, 1, epoch);
  size_t next = 0;
  Measured m;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> trace;
  for (int step = 0; step < FLAGS_warmup + FLAGS_steps; ++step) {
    if (next == batches.size()) {
      batches = data::EpochBatches(lengths, bs, 1, ++epoch);
      next = 0;
    }
    const auto& batch = batches[next++];
    if (step == FLAGS_warmup && !FLAGS_trace.empty()) {
      trace = std::make_unique<torch::autograd::profiler::RecordProfile>(
          FLAGS_trace + "." + std::to_string(bs) + ".json");
    }
    const auto t0 = std::chrono::steady_clock::now();
    model->zero_grad(/*set_to_none=*/true);  // as the worker does
    const size_t chunk = device.is_cpu() && FLAGS_cpu_chunk > 0 ? FLAGS_cpu_chunk : batch.size();
    auto s = AccumulateInChunks(*model, trips, batch, chunk);
    StepOnScaledGradients(*optimizer, *model, 1.0 / s.trips);  // as LocalOptimizer::Step
    if (device.is_cuda()) torch::cuda::synchronize();  // the step's kernels, not their launch
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (step >= FLAGS_warmup) {
      m.seconds += dt;
      m.trips += s.trips;
      for (size_t i : batch) m.points += trips.length(i);
      m.flop += StepFlop(trips, batch);
    }
  }
  return m;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Times one batch size with one pad multiple and prints its line; returns its trips/s.
double MeasureOne(const tteps::data::Trips& trips, const tteps::data::NormStats& stats,
                  const std::vector<size_t>& lengths, int64_t bs, int64_t pad_multiple,
                  torch::Device device, int round) {
  const Measured m = TimeSteps(trips, stats, lengths, bs, pad_multiple, device);
  const double ours = m.trips / m.seconds;
  std::printf("%s\n", tteps::JsonObject()
                          .Add("bench", "train_throughput")
                          .Add("round", round)
                          .Add("batch_size", bs)
                          .Add("pad_multiple", pad_multiple)
                          .Add("threads", FLAGS_threads)
                          .Add("device", device.str())
                          .Add("optimizer", FLAGS_optimizer)
                          .Add("fused_cpu_kernels", FLAGS_fused_cpu_kernels)
                          .Add("cpu_chunk", FLAGS_cpu_chunk)
                          .Add("steps", FLAGS_steps)
                          .Add("trips_per_s", ours)
                          .Add("ms_per_step", 1e3 * m.seconds / FLAGS_steps)
                          .Add("gflop_per_step", m.flop / FLAGS_steps / 1e9)
                          .Add("gflops", m.flop / m.seconds / 1e9)
                          .Add("mean_points_per_trip", double(m.points) / m.trips)
                          .Add("cpu_gemm", tteps::deeptte::GemmName())
                          .Add("blas", tteps::deeptte::BlasName())
                          .str()
                          .c_str());
  std::fflush(stdout);
  return ours;
}

// Each size's (and pad multiple's) median over the rounds, beside PyTorch's, with the core's
// sgemm peak on the CPU. ours: by "size/pad"; theirs: by size.
void PrintMedians(const std::vector<std::string>& sizes, const std::vector<std::string>& pads,
                  const std::map<std::string, std::vector<double>>& ours,
                  const std::map<std::string, std::vector<double>>& theirs, torch::Device device) {
  using tteps::JsonObject;
  const auto median_of = [](const std::map<std::string, std::vector<double>>& m,
                            const std::string& key) {
    const auto it = m.find(key);
    return it == m.end() ? 0.0 : Median(it->second);
  };
  const double peak = device.is_cpu() ? SgemmPeakGflops() : 0;
  for (const auto& bs : sizes) {
    for (const auto& pad : pads) {
      const double tps = median_of(ours, bs + "/" + pad), pytorch = median_of(theirs, bs);
      JsonObject line;
      line.Add("bench", "train_throughput_median")
          .Add("rounds", FLAGS_rounds)
          .Add("batch_size", static_cast<int64_t>(std::stoll(bs)))
          .Add("pad_multiple", static_cast<int64_t>(std::stoll(pad)))
          .Add("device", device.str())
          .Add("fused_cpu_kernels", FLAGS_fused_cpu_kernels)
          .Add("trips_per_s", tps);
      if (FLAGS_pytorch) {
        line.Add("pytorch_trips_per_s", pytorch)
            .Add("tteps_over_pytorch", pytorch > 0 ? tps / pytorch : 0);
      }
      if (peak > 0) line.Add("sgemm_peak_gflops", peak);
      line.Add("cpu_gemm", tteps::deeptte::GemmName()).Add("blas", tteps::deeptte::BlasName());
      std::printf("%s\n", line.str().c_str());
    }
  }
}

// --cpu_path: OpenBLAS reads its kernel type when it loads, so the bench sets the variables and
// starts itself again (once: the second start finds them set).
void ApplyCpuPath(char** argv) {
  if (FLAGS_cpu_path.empty()) return;
  const std::map<std::string, std::pair<std::string, std::string>> paths = {
      {"avx2", {"avx2", "Haswell"}}, {"avx512", {"avx512", "SkylakeX"}}};
  const auto it = paths.find(FLAGS_cpu_path);
  if (it == paths.end()) {
    LOG(ERROR) << "--cpu_path=" << FLAGS_cpu_path << ": expected avx2, avx512 or nothing";
    std::exit(2);
  }
  const char* isa = std::getenv("TTEPS_MAX_CPU_ISA");
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  if (isa && core && it->second.first == isa && it->second.second == core) return;
  setenv("TTEPS_MAX_CPU_ISA", it->second.first.c_str(), 1);
  setenv("OPENBLAS_CORETYPE", it->second.second.c_str(), 1);
  execv("/proc/self/exe", argv);
  PLOG(ERROR) << "--cpu_path: could not restart the bench";
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> original_argv(argv, argv + argc + 1);  // before the flags are taken out
  tteps::InitProgram(&argc, &argv,
                     "bench/train_throughput: DeepTTE training throughput in one process.\n"
                     "Prints one JSON line per batch size and round, then each size's medians.");
  ApplyCpuPath(original_argv.data());
  torch::set_num_threads(FLAGS_threads);
  using namespace tteps;
  const torch::Device device = ResolveDevice(FLAGS_device, 0);
  // On a GPU the baselines all run first, before this process starts CUDA: on the H100 machine
  // a std::system() after CUDA had started crashed this process (SIGSEGV) now and then. On the
  // CPU each round runs the baseline beside tteps, so that both meet the machine's same mood.
  const bool alternate = device.is_cpu();
  const auto sizes = SplitList(FLAGS_batch_sizes);
  const auto pads = SplitList(FLAGS_pad_multiples);
  std::map<std::string, std::vector<double>> theirs, ours;
  if (FLAGS_pytorch && !alternate) {
    for (int r = 0; r < FLAGS_rounds; ++r) {
      for (const auto& bs : sizes) {
        theirs[bs].push_back(PyTorchTripsPerSecond(std::stoll(bs), FLAGS_device));
      }
    }
  }
  const auto source = OpenTrips({FLAGS_data}, "fail", 3);  // JSON-lines or a store
  const data::Trips& trips = *source;
  auto stats = data::LoadNormStats(FLAGS_stats);
  std::vector<size_t> lengths;
  for (size_t i = 0; i < trips.size(); ++i) lengths.push_back(trips.length(i));

  for (int r = 0; r < FLAGS_rounds; ++r) {
    for (const auto& bs : sizes) {
      if (FLAGS_pytorch && alternate) {
        theirs[bs].push_back(PyTorchTripsPerSecond(std::stoll(bs), FLAGS_device));
      }
      for (const auto& pad : pads) {
        ours[bs + "/" + pad].push_back(
            MeasureOne(trips, stats, lengths, std::stoll(bs), std::stoll(pad), device, r));
      }
      if (FLAGS_pytorch) {
        std::printf("%s\n", JsonObject()
                                .Add("bench", "train_throughput_pytorch")
                                .Add("round", r)
                                .Add("batch_size", static_cast<int64_t>(std::stoll(bs)))
                                .Add("device", device.str())
                                .Add("pytorch_trips_per_s", theirs[bs][r])
                                .str()
                                .c_str());
      }
    }
  }
  PrintMedians(sizes, pads, ours, theirs, device);
  return 0;
}
