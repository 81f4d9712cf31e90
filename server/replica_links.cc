#include "server/replica_links.h"

#include "common/transport.h"
#include "server/shard.h"

namespace tteps::server {

ReplicaLinks::ReplicaLinks(zmq::context_t& ctx, const ClusterMap& map, int self) {
  if (ConsistencyFor(map.config.exchange.mode) == Consistency::kSync) return;
  for (int s : ReplicasOf(map, self)) {
    if (s == self) continue;
    zmq::socket_t socket = MakeSocket(ctx, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::sndhwm, 0);
    socket.connect(map.servers.at(s).endpoint);
    sockets_.emplace(s, std::move(socket));
  }
}

bool ReplicaLinks::Send(int server, const Header& h) {
  const auto it = sockets_.find(server);
  return it != sockets_.end() && SendMessage(it->second, h);
}

}  // namespace tteps::server
