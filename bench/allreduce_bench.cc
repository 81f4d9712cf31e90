// bench/allreduce: our ring allreduce and MPI_Allreduce in the same MPI job, for buffers of
// 4 KB .. 64 MB. Reports algorithm bandwidth (bytes / time) and bus bandwidth (x 2(N-1)/N,
// the bytes each rank actually sends), and the ring's ratio to MPI. Run under mpirun; see
// bench/allreduce.sh for 2, 3 and 4 ranks.
#include <gflags/gflags.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/init.h"
#include "common/json_writer.h"
#include "common/split_list.h"
#include "worker/collectives/allreduce.h"

DEFINE_string(sizes_kb, "4,16,64,256,1024,4096,16384,65536", "buffer sizes in KB");
DEFINE_double(seconds, 0.3, "measuring time per size and algorithm");
DEFINE_int32(min_iters, 5, "at least this many allreduces per measurement");

namespace {

// Mean seconds per allreduce; every rank runs the same iteration count (decided by rank 0).
double Time(tteps::collectives::Allreduce& algo, std::vector<float>& buf) {
  algo.Sum(buf.data(), buf.size(), 120);  // warm-up
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = std::chrono::steady_clock::now();
  algo.Sum(buf.data(), buf.size(), 120);
  double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MPI_Bcast(&one, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const int iters = std::max(FLAGS_min_iters, static_cast<int>(FLAGS_seconds / one));
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) algo.Sum(buf.data(), buf.size(), 120);
  double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  double slowest = 0;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "bench_allreduce: ring vs MPI_Allreduce bandwidth (run under mpirun)");
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  auto ring = tteps::collectives::MakeRingAllreduce(MPI_COMM_WORLD);
  auto mpi = tteps::collectives::MakeMpiAllreduce(MPI_COMM_WORLD);
  if (rank == 0) {
    // A markdown table (docs/more-benchmarks.md quotes it); bench/allreduce.sh keeps one header.
    std::printf(
        "| ranks | size KB | ring ms | MPI ms | ring bus MB/s | MPI bus MB/s | ring / MPI |\n"
        "|---|---|---|---|---|---|---|\n");
  }
  for (const int64_t kb : tteps::SplitInts(FLAGS_sizes_kb)) {
    const double bytes = kb * 1024.0;
    std::vector<float> buf(static_cast<size_t>(bytes / sizeof(float)), 1.0f);
    const double t_ring = Time(*ring, buf), t_mpi = Time(*mpi, buf);
    const double factor = 2.0 * (n - 1) / n;  // bus bandwidth = algorithm bandwidth x this
    const double ring_bus = bytes / t_ring * factor / 1e6, mpi_bus = bytes / t_mpi * factor / 1e6;
    if (rank == 0) {
      std::printf("| %d | %lld | %.3f | %.3f | %.0f | %.0f | %.2f |\n", n,
                  static_cast<long long>(kb), 1e3 * t_ring, 1e3 * t_mpi, ring_bus, mpi_bus,
                  ring_bus / mpi_bus);
      std::fprintf(stderr, "%s\n",
                   tteps::JsonObject()
                       .Add("bench", "allreduce")
                       .Add("ranks", n)
                       .Add("size_kb", kb)
                       .Add("ring_ms", 1e3 * t_ring)
                       .Add("mpi_ms", 1e3 * t_mpi)
                       .Add("ring_algbw_mb_s", bytes / t_ring / 1e6)
                       .Add("mpi_algbw_mb_s", bytes / t_mpi / 1e6)
                       .Add("ring_busbw_mb_s", ring_bus)
                       .Add("mpi_busbw_mb_s", mpi_bus)
                       .Add("ring_over_mpi", ring_bus / mpi_bus)
                       .str()
                       .c_str());
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
