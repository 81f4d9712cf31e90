#include "server/server_commands.h"

#include <glog/logging.h>

#include <utility>

#include "common/bootstrap.h"
#include "server/topics.h"

namespace tteps::server {

void ServerCommands::Listen(ControlChannel& control) {
  // The handlers run on the channel's thread under its lock: they only queue.
  control.OnCommand(topics::kNormTotal,
                    [this](const topics::NormTotal& n) { PutNorm(n.version, n.norm); });
  control.OnCommand(topics::kServerLost, [this](const topics::ServerLost& l) {
    LOG(WARNING) << "server " << l.server << " was declared lost; its replicas serve its range";
    ServerCommand c;
    c.kind = ServerCommand::kServerLost;
    c.server = l.server;
    Push(std::move(c));
    NoteLostPeer();
  });
  control.OnCommand(topics::kWorkerJoined, [this](const topics::WorkerJoined& j) {
    ServerCommand c;
    c.kind = ServerCommand::kWorkerJoined;
    c.slot = j.slot;
    c.worker = j.joiner;
    c.clock = j.clock;
    Push(std::move(c));
  });
  control.OnCommand(topics::kWorkerLost, [this](const topics::WorkerLost& l) {
    ServerCommand c;
    c.kind = ServerCommand::kWorkerLost;
    c.worker = l.worker;
    Push(std::move(c));
    NoteLostPeer();
  });
  control.OnCommand(topics::kRollback, [this](const ClusterMap& map) {
    ServerCommand c;
    c.kind = ServerCommand::kRollback;
    c.map = map;
    Push(std::move(c));
    NoteLostPeer();
  });
}

void ServerCommands::Push(ServerCommand command) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(command));
}

std::vector<ServerCommand> ServerCommands::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ServerCommand> taken;
  while (!queue_.empty()) {
    taken.push_back(std::move(queue_.front()));
    queue_.pop_front();
    if (taken.back().kind == ServerCommand::kRollback) break;
  }
  return taken;
}

void ServerCommands::PutNorm(int64_t version, double norm) {
  std::lock_guard<std::mutex> lock(mu_);
  norms_[version] = norm;
}

std::optional<double> ServerCommands::TakeNorm(int64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = norms_.find(version);
  if (it == norms_.end()) return std::nullopt;
  const double norm = it->second;
  norms_.erase(it);
  return norm;
}

void ServerCommands::ClearNorms() {
  std::lock_guard<std::mutex> lock(mu_);
  norms_.clear();
}

}  // namespace tteps::server
