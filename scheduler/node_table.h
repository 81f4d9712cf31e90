// The job's registered nodes as the scheduler knows them, and the one way to send them
// something: a command to every live node of a role (or one of them), a shutdown, a map.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "common/bootstrap.h"
#include "common/cluster_map.h"
#include "common/json_writer.h"
#include "common/message.h"
#include "common/topic.h"

namespace tteps::scheduler {

struct Node {
  NodeInfo info;
  std::string peer;  // routing id of its control socket
  std::chrono::steady_clock::time_point last_seen;
  bool done = false;
  bool lost = false;  // declared lost (the job goes on without it)
  int64_t view = -1;  // the last membership view its heartbeats said it followed
  // The broadcast of views (JobState::view_serial) whose view it holds; -1: none it is known to
  // hold (it gets the next one whole, not as changes).
  int64_t view_sent = -1;
};

class NodeTable {
 public:
  explicit NodeTable(zmq::socket_t& socket) : socket_(socket) {}

  Node* Find(const std::string& peer);
  Node& Add(const NodeInfo& info, const std::string& peer);
  std::vector<Node>& all() { return nodes_; }
  const std::vector<Node>& all() const { return nodes_; }
  int size() const { return static_cast<int>(nodes_.size()); }
  // Registered nodes of `role`; live_only: those not declared lost.
  int Count(Role role, bool live_only = false) const;
  // "worker 1 (rank 2 on host ...), ..." of the lost nodes of `role`.
  std::string LostNames(Role role) const;
  // Whether every node of `role` finished (or was lost).
  bool AllDone(Role role) const;
  // The display name of worker `id`, or "worker ID" when none registered.
  std::string WorkerName(int id) const;

  // Command `topic` with `body` to every node of `role` (or only id `only_id`) not done.
  template <class Body>
  void Command(Role role, const Topic<Body>& topic, const Body& body = {}, int only_id = -1) {
    CommandText(role, topic.name, topic.Encode(body), only_id);
  }
  // Command `topic` with `body` to the node at `peer`.
  template <class Body>
  void CommandTo(const std::string& peer, const Topic<Body>& topic, const Body& body) {
    Send(peer, CommandHeader(topic.name, topic.Encode(body)));
  }
  // Command `topic` with an encoded body; false where ZeroMQ refused it (logged).
  bool CommandTextTo(const std::string& peer, const std::string& topic, std::string body) {
    return Send(peer, CommandHeader(topic, std::move(body)));
  }
  // False where ZeroMQ refused it (logged).
  bool Send(const std::string& peer, Header h);
  void Shutdown(const std::string& peer, const std::string& reason);
  // kShutdown with `reason` to every node, lost ones too (a lost one may still listen).
  void Broadcast(const std::string& reason);
  void SendMap(const std::string& peer, const ClusterMap& map);

  // The control plane's load: what the scheduler received (by type) and sent, messages and
  // the bytes of their bodies.
  void CountReceived(const Header& h) {
    ++received_[h.type];
    received_bytes_ += static_cast<int64_t>(h.text.size());
  }
  // {"received": {TYPE: n, ...}, "received_bytes": n, "sent": n, "sent_bytes": n,
  //  "undelivered": n}: sends ZeroMQ refused (a peer gone, or its queue full), each logged.
  JsonObject Traffic() const;

 private:
  static Header CommandHeader(const std::string& topic, std::string body);
  void CommandText(Role role, const std::string& topic, const std::string& body, int only_id);

  zmq::socket_t& socket_;
  std::vector<Node> nodes_;
  // Every message is looked up by its sender: an index, not a scan (thousands of nodes).
  std::unordered_map<std::string, size_t> by_peer_;
  std::map<MsgType, int64_t> received_;
  int64_t sent_ = 0, sent_bytes_ = 0, received_bytes_ = 0, undelivered_ = 0;
};

}  // namespace tteps::scheduler
