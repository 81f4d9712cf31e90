#include "scheduler/node_table.h"

#include <glog/logging.h>

#include "common/cereal_body.h"
#include "common/clock.h"
#include "common/transport.h"

namespace tteps::scheduler {

Node* NodeTable::Find(const std::string& peer) {
  const auto it = by_peer_.find(peer);
  return it == by_peer_.end() ? nullptr : &nodes_[it->second];
}

Node& NodeTable::Add(const NodeInfo& info, const std::string& peer) {
  by_peer_[peer] = nodes_.size();
  nodes_.push_back({info, peer, Clock::now(), false, false});
  return nodes_.back();
}

JsonObject NodeTable::Traffic() const {
  JsonObject received;
  for (const auto& [type, n] : received_) received.Add(TypeName(type), n);
  return JsonObject()
      .Add("received", received)
      .Add("received_bytes", received_bytes_)
      .Add("sent", sent_)
      .Add("sent_bytes", sent_bytes_)
      .Add("undelivered", undelivered_);
}

int NodeTable::Count(Role role, bool live_only) const {
  int count = 0;
  for (const auto& n : nodes_) count += n.info.role == role && !(live_only && n.lost);
  return count;
}

std::string NodeTable::LostNames(Role role) const {
  std::string names;
  for (const auto& n : nodes_) {
    if (n.info.role == role && n.lost) names += (names.empty() ? "" : ", ") + n.info.Name();
  }
  return names;
}

bool NodeTable::AllDone(Role role) const {
  for (const auto& n : nodes_) {
    if (n.info.role == role && !n.done) return false;
  }
  return true;
}

std::string NodeTable::WorkerName(int id) const {
  for (const auto& n : nodes_) {
    if (n.info.role == Role::kWorker && n.info.id == id) return n.info.Name();
  }
  return "worker " + std::to_string(id);
}

Header NodeTable::CommandHeader(const std::string& topic, std::string body) {
  Header h;
  h.type = MsgType::kCommand;
  h.topic = topic;
  h.text = std::move(body);
  return h;
}

void NodeTable::CommandText(Role role, const std::string& topic, const std::string& body,
                            int only_id) {
  const Header h = CommandHeader(topic, body);
  for (const auto& n : nodes_) {
    if (n.info.role != role || n.done || (only_id >= 0 && n.info.id != only_id)) continue;
    Send(n.peer, h);
  }
}

bool NodeTable::Send(const std::string& peer, Header h) {
  h.sender_role = Role::kScheduler;
  sent_bytes_ += static_cast<int64_t>(h.text.size());
  ++sent_;
  if (!SendMessage(socket_, h, {}, peer)) {
    ++undelivered_;
    const Node* node = Find(peer);
    LOG_IF(WARNING, undelivered_ <= 10 || undelivered_ % 1000 == 0)
        << TypeName(h.type) << " to " << (node ? node->info.Name() : "an unknown peer")
        << " not delivered (gone, or its queue full; " << undelivered_ << " so far)";
    return false;
  }
  return true;
}

void NodeTable::Shutdown(const std::string& peer, const std::string& reason) {
  Header h;
  h.type = MsgType::kShutdown;
  h.text = reason;
  Send(peer, h);
}

void NodeTable::Broadcast(const std::string& reason) {
  for (const auto& n : nodes_) Shutdown(n.peer, reason);
}

void NodeTable::SendMap(const std::string& peer, const ClusterMap& map) {
  Header h;
  h.type = MsgType::kClusterMap;
  h.text = EncodeBody(map);
  Send(peer, h);
}

}  // namespace tteps::scheduler
