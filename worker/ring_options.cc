#include "worker/ring_options.h"

#include <stdexcept>

namespace tteps {

void RingOptions::Validate() const {
  if (allreduce != "ring" && allreduce != "mpi") {
    throw std::invalid_argument("--allreduce must be ring or mpi, not '" + allreduce + "'");
  }
  if (check_every < 1) throw std::invalid_argument("--check_every must be >= 1");
  if (average_every < 1) throw std::invalid_argument("--average_every must be >= 1");
}

}  // namespace tteps
