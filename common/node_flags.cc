#include "common/node_flags.h"

#include <cstdio>
#include <exception>

#include "common/log_file.h"

DEFINE_double(timeout_s, 30,
              "bound of every blocking wait: a peer silent for longer is named in an error and "
              "the job exits non-zero");
DEFINE_double(heartbeat_s, 1, "seconds between heartbeats to the scheduler");
DEFINE_string(scheduler, "",
              "start without MPI: the scheduler's endpoint tcp://host:port (the scheduler binds "
              "it; other nodes connect)");
DEFINE_string(advertise_host, "",
              "address other nodes use to reach this one (default: the address it listens on: "
              "127.0.0.1 when the whole job runs on one host, else --bind_interface's or the "
              "host's outside address)");
DEFINE_string(bind_interface, "",
              "listen only on this network interface's IPv4 address (e.g. eth0); needed across "
              "hosts when a host has several outside addresses");

DEFINE_string(curve_dir, "",
              "authenticate and encrypt every ZeroMQ socket with the CURVE keys in DIR (made by "
              "tteps-keygen DIR); every process of the job needs the same directory");

DEFINE_string(logs, "",
              "write this process's whole log to DIR/<role>-<rank>.log; the console then gets "
              "only errors (launch/tteps sets it to <out_dir>/logs)");
DEFINE_bool(verbose, false, "with --logs: every log line on the console too");

namespace tteps {

NodeOptions NodeOptionsFromFlags() {
  NodeOptions o;
  o.scheduler = FLAGS_scheduler;
  o.advertise_host = FLAGS_advertise_host;
  o.bind_interface = FLAGS_bind_interface;
  o.curve_dir = FLAGS_curve_dir;
  o.timeout_s = FLAGS_timeout_s;
  o.heartbeat_s = FLAGS_heartbeat_s;
  return o;
}

void StartLogFile(const std::string& role) {
  if (FLAGS_logs.empty()) return;
  try {
    LogToFile(FLAGS_logs, role, FLAGS_verbose);
  } catch (const std::exception& e) {
    // The process still runs and says why; its log stays on the console.
    std::fprintf(stderr, "[%s] error: %s; logging to the console instead\n", role.c_str(),
                 e.what());
  }
}

}  // namespace tteps
