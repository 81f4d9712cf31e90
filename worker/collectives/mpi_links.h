// Ring links over MPI point-to-point messages (nonblocking send and receive): the transport of
// a job whose membership never changes. `comm` must outlive the links.
#pragma once

#include <mpi.h>

#include <memory>

#include "worker/collectives/ring_links.h"

namespace tteps::collectives {

std::unique_ptr<RingLinks> MakeMpiLinks(MPI_Comm comm);

}  // namespace tteps::collectives
