#include "common/bootstrap.h"

#include <glog/logging.h>
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/cluster_map.h"
#include "common/net_address.h"

namespace tteps {

namespace {

constexpr int kHostLen = 256;

// MPI's start-up and collectives have no deadline: if a rank of the job never starts (a bad
// flag, a missing file), the others would wait in them forever. The watchdog bounds the whole
// bootstrap, from before MPI_Init until the scheduler's endpoint is shared, by --timeout_s.
class BootstrapWatchdog {
 public:
  void Arm(double timeout_s) {
    thread_ = std::thread([this, timeout_s] {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return done_; })) {
        return;
      }
      LOG(ERROR) << "bootstrap did not complete within " << timeout_s
                 << " s (--timeout_s): another process of the job did not start or failed "
                    "early (see its error above)";
      google::FlushLogFiles(google::GLOG_ERROR);
      std::_Exit(1);
    });
  }
  void Disarm() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

BootstrapWatchdog& Watchdog() {
  static BootstrapWatchdog* w = new BootstrapWatchdog();
  return *w;
}

// "tcp://HOST:PORT" -> HOST.
std::string EndpointHost(const std::string& endpoint) {
  const size_t begin = endpoint.find("://");
  const size_t end = endpoint.rfind(':');
  if (begin == std::string::npos || end == std::string::npos || end <= begin + 3) {
    throw std::invalid_argument("--scheduler " + endpoint + ": expected tcp://HOST:PORT");
  }
  return endpoint.substr(begin + 3, end - begin - 3);
}

// Every role listens: the scheduler and servers for requests, workers for their ring
// neighbour (ring mode over TCP).
void SetAddress(Bootstrap* b, const std::string& advertise_host, const std::string& bind_interface,
                bool one_host) {
  const NodeAddress a = ChooseAddress(advertise_host, bind_interface, one_host);
  b->bind_host = a.bind;
  b->advertise_host = a.advertise;
}

}  // namespace

Bootstrap StartNode(Role role, const NodeOptions& opts) {
  Bootstrap b;
  if (!opts.scheduler.empty()) {
    b.scheduler_endpoint = opts.scheduler;
    // Without MPI the scheduler's endpoint tells whether the job is on one host (a loopback
    // address or localhost). The scheduler listens on the address its endpoint names, unless
    // that name resolves to loopback here (Debian maps the host name to 127.0.1.1).
    const std::string host = EndpointHost(opts.scheduler);
    const bool one_host = host == "localhost" || IsLoopback(host);
    std::string advertise = opts.advertise_host;
    if (role == Role::kScheduler && advertise.empty() && !IsLoopback(ResolveIPv4(host))) {
      advertise = host;
    }
    SetAddress(&b, advertise, opts.bind_interface, one_host);
    return b;
  }
  b.mpi = true;
  Watchdog().Arm(opts.timeout_s);
  // The ring backend calls MPI from its communication thread, one thread at a time.
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    throw std::runtime_error("the MPI library does not support MPI_THREAD_SERIALIZED");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.size);

  const int my_role = static_cast<int>(role);
  std::vector<int> roles(b.size);
  MPI_Allgather(&my_role, 1, MPI_INT, roles.data(), 1, MPI_INT, MPI_COMM_WORLD);
  char my_host[kHostLen] = {0};
  std::strncpy(my_host, HostName().c_str(), kHostLen - 1);
  std::vector<char> hosts(static_cast<size_t>(b.size) * kHostLen);
  MPI_Allgather(my_host, kHostLen, MPI_CHAR, hosts.data(), kHostLen, MPI_CHAR, MPI_COMM_WORLD);

  int schedulers = 0;
  bool one_host = true;
  for (int r = 0; r < b.size; ++r) {
    const Role rr = static_cast<Role>(roles[r]);
    if (rr == role && r < b.rank) ++b.role_id;
    if (rr == Role::kScheduler) ++schedulers;
    if (rr == Role::kServer) ++b.num_servers;
    if (rr == Role::kWorker) ++b.num_workers;
    if (std::strncmp(&hosts[r * kHostLen], my_host, kHostLen) != 0) one_host = false;
  }
  ++b.role_id;  // count of earlier same-role ranks -> this rank's index
  // Collective over all ranks; ordered by world rank, so a worker's rank in it is its id.
  MPI_Comm_split(MPI_COMM_WORLD, role == Role::kWorker ? 1 : MPI_UNDEFINED, b.rank,
                 &b.workers_comm);
  if (schedulers != 1 || roles[0] != static_cast<int>(Role::kScheduler)) {
    throw std::runtime_error("the job needs exactly one tteps-scheduler, as MPI rank 0 (found " +
                             std::to_string(schedulers) + ")");
  }
  SetAddress(&b, opts.advertise_host, opts.bind_interface, one_host);
  return b;
}

void ShareSchedulerEndpoint(Bootstrap* b, const std::string& endpoint_if_scheduler) {
  if (!b->mpi) return;
  char buf[kHostLen] = {0};
  if (b->rank == 0) std::strncpy(buf, endpoint_if_scheduler.c_str(), kHostLen - 1);
  MPI_Bcast(buf, kHostLen, MPI_CHAR, 0, MPI_COMM_WORLD);
  b->scheduler_endpoint = buf;
  b->endpoint_shared = true;
  Watchdog().Disarm();
  if (b->rank != 0 && b->scheduler_endpoint.empty()) {
    throw JobEndedElsewhere("the scheduler failed before the job started (see its error)");
  }
}

int RunNode(Role role, const NodeOptions& opts, const std::function<int(Bootstrap&)>& body) {
  Bootstrap boot;
  int rc = 1;
  try {
    boot = StartNode(role, opts);
    rc = body(boot);
  } catch (const JobEndedElsewhere& e) {
    LOG(WARNING) << e.what();
    rc = 1;
  } catch (const std::exception& e) {
    LOG(ERROR) << e.what();
    rc = 1;
  }
  EndNode(boot, rc == 0, opts.timeout_s);
  return rc;
}

NodeInfo SelfInfo(Role role, const Bootstrap& boot) {
  NodeInfo self;
  self.role = role;
  self.id = boot.role_id;
  self.mpi_rank = boot.rank;
  self.host = HostName();
  self.pid = getpid();
  return self;
}

namespace {
std::atomic<bool> lost_peer{false};
}  // namespace

void NoteLostPeer() { lost_peer = true; }

void EndNode(const Bootstrap& b, bool ok, double timeout_s) {
  if (!b.mpi) return;
  if (!ok && !b.endpoint_shared && b.rank == 0) {
    // The scheduler failed before sharing its endpoint: an empty one tells every rank waiting
    // in the broadcast to stop at once (MPI_Abort does not end them under --enable-recovery).
    Bootstrap copy = b;
    ShareSchedulerEndpoint(&copy, "");
    return;
  }
  if (ok) {
    // A dead rank can keep OpenMPI's finalize fence from completing (seen after a worker was
    // killed): bounded, like every other wait.
    const double limit_s = lost_peer ? 3.0 : timeout_s;
    std::mutex mu;
    std::condition_variable cv;
    bool finalized = false;
    std::thread guard([&] {
      std::unique_lock<std::mutex> lock(mu);
      if (cv.wait_for(lock, std::chrono::duration<double>(limit_s), [&] { return finalized; })) {
        return;
      }
      LOG(WARNING) << "MPI_Finalize did not return within " << limit_s
                   << " s (a process of the job was lost, or OpenMPI's daemons hang); exiting "
                      "without it: the job's results are written";
      google::FlushLogFiles(google::GLOG_INFO);
      std::fflush(stdout);
      std::_Exit(0);
    });
    MPI_Finalize();
    {
      std::lock_guard<std::mutex> lock(mu);
      finalized = true;
    }
    cv.notify_all();
    guard.join();
  } else if (!b.endpoint_shared) {
    Watchdog().Disarm();
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace tteps
