// How a node finds the cluster. Under mpirun (the default) MPI is used for bootstrap only:
// every rank learns every rank's role and host, and the scheduler's ZeroMQ endpoint, bound on
// an ephemeral port, is broadcast. Started without MPI (--scheduler=tcp://host:port), the
// endpoint comes from the flag and the scheduler assigns ids in order of registration.
#pragma once

#include <mpi.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "common/cluster_map.h"
#include "common/message.h"

namespace tteps {

struct Bootstrap {
  bool mpi = false;
  int rank = -1;  // MPI world rank
  int size = 0;
  int num_servers = 0, num_workers = 0;  // from the ranks' roles (MPI only)
  int role_id = -1;                      // index among ranks of the same role (MPI only)
  std::string bind_host;                 // the one address it listens on
  std::string advertise_host;            // what peers connect to
  std::string scheduler_endpoint;
  bool endpoint_shared = false;  // past the collective that peers would otherwise wait in
  // The workers' own communicator (ring modes; MPI only; MPI_COMM_NULL on other roles). Its
  // rank of a worker equals the worker's id.
  MPI_Comm workers_comm = MPI_COMM_NULL;
};

// Another process's failure ended this one before the job started: that process names the
// cause, so this one only notes it (a warning in its log, not an error on the console).
class JobEndedElsewhere : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How this node finds the cluster (common/node_flags.h fills it from the command line).
struct NodeOptions {
  std::string scheduler;       // start without MPI: the scheduler's tcp://host:port
  std::string advertise_host;  // empty: the address bound (common/net_address.h)
  std::string bind_interface;  // listen on this interface's address only
  std::string curve_dir;       // CURVE keys (tteps-keygen); empty: plain sockets
  double timeout_s = 30;       // bounds the bootstrap, the registration and every wait before
                               // the job's configuration arrives
  double heartbeat_s = 1;      // between heartbeats to the scheduler
};

// Throws std::runtime_error on an inconsistent job (for example no scheduler rank, or several).
Bootstrap StartNode(Role role, const NodeOptions& opts);
// Collective under MPI: the scheduler passes its endpoint, every other rank receives it.
void ShareSchedulerEndpoint(Bootstrap* boot, const std::string& endpoint_if_scheduler);
// Ends MPI cleanly when `ok`. After a failure peers may be gone, so MPI_Finalize (which may
// wait for them) is skipped and the process just exits with its error status; a failure before
// the endpoint was shared aborts the job, since the other ranks wait for it in a collective.
// MPI_Finalize waits for every rank: it gets `timeout_s`, or a few seconds once a process of
// the job was lost (NoteLostPeer), after which the process exits with its status anyway.
void EndNode(const Bootstrap& boot, bool ok, double timeout_s = 30);
// A process of this job was lost while the job went on (a worker of a PS job).
void NoteLostPeer();

// The body of a node program: StartNode, then `body`, then EndNode with its verdict. An
// exception is logged and makes the exit status 1.
int RunNode(Role role, const NodeOptions& opts, const std::function<int(Bootstrap&)>& body);

// This node's registration: role, id (MPI) and rank, host, pid.
NodeInfo SelfInfo(Role role, const Bootstrap& boot);

}  // namespace tteps
