// Async / SSP with --replicas: DEALER sockets from a server to the other servers holding its
// range, over which the range's primary names the pushes it applied (server/push_order.h).
#pragma once

#include <map>
#include <zmq.hpp>

#include "common/cluster_map.h"
#include "common/message.h"

namespace tteps::server {

class ReplicaLinks {
 public:
  // Connects to every other server of `self`'s range in `map` (none in sync mode).
  ReplicaLinks(zmq::context_t& ctx, const ClusterMap& map, int self);
  // Never blocks: the queue to a server is unbounded (its entries are a header each) until the
  // scheduler declares it lost and the caller stops sending. False if ZeroMQ refused it.
  bool Send(int server, const Header& h);

 private:
  std::map<int, zmq::socket_t> sockets_;
};

}  // namespace tteps::server
