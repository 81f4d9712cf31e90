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
#include "common/lost_servers.h"
#include "common/mode.h"
#include "common/trace.h"
#include "worker/collectives/tcp_ring.h"
#include "worker/deeptte/deeptte.h"
#include "worker/exchange/exchange.h"

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
  // Sync: a lost worker's slice was given to this worker (KVClientOptions::interrupt).
  std::function<bool()> interrupt;
  // --replicas: the servers declared lost (the KV client reads their ranges from replicas).
  const LostServers* lost_servers = nullptr;
  // PS modes: true ends the exchange's waits with an exception (a rollback is coming).
  std::function<bool()> abort;
  // Ring mode over --ring_transport tcp: this worker's ring socket, and the workers declared
  // lost so far (in order) and their count; the ring is rebuilt without them.
  collectives::TcpRing* tcp_ring = nullptr;
  std::function<std::vector<int>()> lost_workers;
  std::function<size_t()> lost_worker_count;
};

// The exchange of c.config.exchange.mode. Throws std::runtime_error when the context lacks what
// the mode needs.
std::unique_ptr<Exchange> MakeExchange(deeptte::DeepTTEImpl& model, const ExchangeContext& c);

}  // namespace tteps
