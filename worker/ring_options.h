// Options of the ring modes (workers only, no servers): ring averages gradients every step,
// average lets each worker step alone and averages the parameters every k steps. Torch-free.
#pragma once

#include <cstdint>
#include <string>

namespace tteps {

struct RingOptions {
  std::string allreduce = "ring";  // ring (ours) | mpi (MPI_Allreduce)
  double bucket_mb = 25;           // gradient bucket size; <= 0: one bucket
  int64_t check_every = 20;        // steps between parameter checksums across workers
  int64_t average_every = 10;      // average mode: local steps between parameter averages

  void Validate() const;  // throws std::invalid_argument naming the bad option
};

}  // namespace tteps
