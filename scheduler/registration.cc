#include "scheduler/registration.h"

#include <glog/logging.h>

#include "common/clock.h"
#include "common/codec.h"
#include "common/transport.h"
#include "scheduler/placement.h"

namespace tteps::scheduler {

std::string DataMismatch(const NodeInfo& info, const JobData& data) {
  // A worker without its own --train_data reads the job's and checks it once loaded.
  if (info.role != Role::kWorker || info.data_path.empty() || info.data_checksum == data.checksum) {
    return "";
  }
  const auto what = [](const std::string& checksum) {
    return checksum.empty() ? std::string("is not a trip store") : "is the store " + checksum;
  };
  return "worker on host " + info.host + " (pid " + std::to_string(info.pid) +
         "): its training data '" + info.data_path + "' " + what(info.data_checksum) +
         ", the scheduler's '" + data.path + "' " + what(data.checksum) +
         ": every host needs the same data (a copy, or a shared file system)";
}

std::string RegistrationRefusal(const std::vector<Node>& nodes, int expected, const JobData& data,
                                NodeInfo* info, bool* fatal) {
  *fatal = false;
  if (info->role == Role::kScheduler) return "a second scheduler tried to register";
  int taken = 0;
  for (const auto& n : nodes) taken += n.info.role == info->role;
  if (taken >= expected) {
    return std::string("the job already has its ") + std::to_string(expected) + " " +
           RoleName(info->role) + "s";
  }
  if (info->id < 0) info->id = taken;  // started without MPI: ids in order of registration
  for (const auto& n : nodes) {
    if (n.info.role == info->role && n.info.id == info->id) {
      return std::string(RoleName(info->role)) + " id " + std::to_string(info->id) + " is taken";
    }
  }
  // A member of the job that cannot read the job's data: the job cannot run.
  std::string why = DataMismatch(*info, data);
  *fatal = !why.empty();
  return why;
}

std::vector<KeyRange> LaunchRanges(const CoordinatorOptions& opts, const ClusterMap& map) {
  if (!opts.resume_ranges.empty()) return opts.resume_ranges;
  if (opts.num_servers <= 0) return {};
  std::vector<double> weights;
  if (opts.config.exchange.balance_links) {
    std::vector<std::string> server_hosts, worker_hosts;
    for (const auto& s : map.servers) server_hosts.push_back(s.host);
    for (const auto& w : map.workers) worker_hosts.push_back(w.host);
    weights = LinkBalancedWeights(server_hosts, worker_hosts);
  }
  return ServerRanges(opts.param_count, opts.num_servers, opts.config.cluster.replicas, weights,
                      opts.light_keys);
}

std::string OpenJobWarning(size_t hosts) {
  return "the job spans " + std::to_string(hosts) +
         " hosts without authentication: anyone who reaches its ports can push to it (make "
         "keys with tteps-keygen DIR and pass --curve_dir DIR)";
}

std::string AnswerOtherRelease(zmq::socket_t& socket, const std::string& peer,
                               const ProtocolVersionError& error) {
  const std::string what =
      "a process of another tteps release tried to join the job: it speaks protocol version " +
      std::to_string(error.version()) + ", this scheduler version " +
      std::to_string(kProtocolVersion) +
      "; every host of a job needs the same tteps release (docs/compatibility.md)";
  Header h;
  h.type = MsgType::kError;
  h.text = what;
  SendMessage(socket, h, {}, peer);
  return what;
}

void RefuseLateRegistrations(zmq::socket_t& socket, NodeTable& nodes, const std::string& reason,
                             int missing, double limit_s) {
  const auto start = Clock::now();
  while (missing > 0 && SecondsSince(start) < limit_s) {
    Message m;
    std::string peer;
    try {
      if (!ReceiveMessage(socket, true, 50, &m, &peer) || m.header.type != MsgType::kRegister) {
        continue;
      }
    } catch (const ProtocolVersionError& e) {
      LOG(ERROR) << AnswerOtherRelease(socket, peer, e);
      continue;
    } catch (const CodecError& e) {
      LOG(ERROR) << "malformed registration ignored: " << e.what();
      continue;
    }
    nodes.Shutdown(m.peer, reason);
    --missing;
  }
}

}  // namespace tteps::scheduler
