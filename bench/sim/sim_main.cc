// tteps-sim-worker: --count simulated workers in one process, each with its own sockets to the
// real scheduler and servers (bench/sim/sim_worker.h). Started by bench/scale, without MPI:
//   tteps-sim-worker --scheduler tcp://HOST:PORT --count 64 [--compute_s 0.01]
//                    [--key_fraction 1] [--results F]
// The model's flags (--kernel_size, --num_filter, ...) give the layout, as a worker's do.
// Prints (or writes to --results) one JSON line per simulated worker; exits 1 if any failed or
// pulled final weights other than the synthetic gradients predict.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "bench/sim/sim_worker.h"
#include "common/init.h"
#include "common/job_flags.h"
#include "common/node_flags.h"
#include "model/deeptte/layout.h"

DEFINE_int32(count, 1, "simulated workers in this process");
DEFINE_double(compute_s, 0.01, "each step's computation, slept");
DEFINE_double(key_fraction, 1,
              "the share of each server's range that pushes and pulls carry (1: every key)");
DEFINE_string(results, "", "where the JSON lines go (empty: standard output)");

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-sim-worker: simulated workers for bench/scale (no LibTorch).\n"
                     "  tteps-sim-worker --scheduler tcp://HOST:PORT --count N");
  tteps::StartLogFile("sim-worker");
  tteps::sim::SimShared shared;
  shared.node = tteps::NodeOptionsFromFlags();
  if (shared.node.scheduler.empty()) {
    LOG(ERROR) << "--scheduler is required";
    return 2;
  }
  shared.layout = tteps::deeptte::LayoutFor(tteps::JobConfigFromFlags().model);
  shared.gradients = tteps::sim::GradientsByCoefficient(shared.layout.total());
  shared.compute_s = FLAGS_compute_s;
  shared.key_fraction = FLAGS_key_fraction;
  zmq::context_t ctx;
  // Each simulated worker holds a socket per server, its control channel's and their pipes.
  ctx.set(zmq::ctxopt::max_sockets, 65536);
  std::vector<tteps::sim::SimOutcome> outcomes(FLAGS_count);
  std::vector<std::thread> threads;
  for (int i = 0; i < FLAGS_count; ++i) {
    threads.emplace_back([&, i] { outcomes[i] = tteps::sim::SimWorker(ctx, shared).Run(); });
  }
  for (auto& t : threads) t.join();
  std::ofstream file;
  if (!FLAGS_results.empty()) file.open(FLAGS_results);
  std::ostream& out = FLAGS_results.empty() ? std::cout : file;
  bool ok = true;
  for (const auto& o : outcomes) {
    out << o.ToJson().str() << "\n";
    ok = ok && o.error.empty() && (o.async || o.checked_keys > 0) && o.mismatch.count == 0;
  }
  return ok ? 0 : 1;
}
