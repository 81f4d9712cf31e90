#include "common/node_flags.h"

DEFINE_double(timeout_s, 30,
              "bound of every blocking wait: a peer silent for longer is named in an error and "
              "the job exits non-zero");
DEFINE_double(heartbeat_s, 1, "seconds between heartbeats to the scheduler");
DEFINE_string(scheduler, "",
              "start without MPI: the scheduler's endpoint tcp://host:port (the scheduler binds "
              "it; other nodes connect)");
DEFINE_string(advertise_host, "",
              "address other nodes use to reach this one (default: 127.0.0.1 when the whole job "
              "runs on one host, else the host name)");

namespace tteps {

NodeOptions NodeOptionsFromFlags() {
  NodeOptions o;
  o.scheduler = FLAGS_scheduler;
  o.advertise_host = FLAGS_advertise_host;
  o.timeout_s = FLAGS_timeout_s;
  o.heartbeat_s = FLAGS_heartbeat_s;
  return o;
}

}  // namespace tteps
