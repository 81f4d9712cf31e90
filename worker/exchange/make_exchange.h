// The exchange factory: the one place that turns the job's mode into a way of combining
// gradients, with what that way needs (sockets to the servers, the workers' communicator).
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <vector>
#include <zmq.hpp>

#include "common/cluster_map.h"
#include "common/control_channel.h"
#include "common/job_config.h"
#include "common/mode.h"
#include "common/trace.h"
#include "model/deeptte/deeptte.h"
#include "worker/collectives/tcp_ring.h"
#include "worker/exchange/exchange.h"
#include "worker/exchange/membership_link.h"

namespace tteps {

// What the process offers its exchange. The distributed modes need the cluster map and the
// control channel; the PS modes the ZeroMQ context; the ring modes the workers' communicator.
struct ExchangeContext {
  JobConfig config;
  Tracer* tracer = nullptr;
  const ClusterMap* map = nullptr;
  ControlChannel* control = nullptr;
  zmq::context_t* zmq = nullptr;
  MPI_Comm workers_comm = MPI_COMM_NULL;
  // The job's membership: views that cut a wait short, lost servers and workers, a rollback
  // coming.
  MembershipLink* membership = nullptr;
  // Ring mode over --ring_transport tcp: this worker's ring socket (rebuilt without the lost).
  collectives::TcpRing* tcp_ring = nullptr;
};

// The exchange of c.config.exchange.mode. Throws std::runtime_error when the context lacks what
// the mode needs.
std::unique_ptr<Exchange> MakeExchange(deeptte::DeepTTEImpl& model, const ExchangeContext& c);

}  // namespace tteps
