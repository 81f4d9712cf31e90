#include "server/server_commands.h"

#include <utility>

namespace tteps::server {

bool ServerCommands::Follow(const View& view) {
  std::lock_guard<std::mutex> lock(mu_);
  const ViewChanges changes = follower_.Follow(view);
  if (changes.remap) {
    // The epoch's serving ends here; what follows in the view is of the new map.
    ServerCommand c;
    c.kind = ServerCommand::kRollback;
    c.remap = *changes.remap;
    queue_.push_back(std::move(c));
  }
  for (int w : changes.lost_workers) {
    ServerCommand c;
    c.kind = ServerCommand::kWorkerLost;
    c.worker = w;
    queue_.push_back(std::move(c));
  }
  for (const auto& [place, holder] : changes.places) {
    ServerCommand c;
    c.kind = ServerCommand::kWorkerJoined;
    c.slot = place;
    c.worker = holder.joiner;
    c.clock = holder.clock;
    queue_.push_back(std::move(c));
  }
  for (int s : changes.lost_servers) {
    ServerCommand c;
    c.kind = ServerCommand::kServerLost;
    c.server = s;
    queue_.push_back(std::move(c));
  }
  return !changes.lost_workers.empty() || !changes.lost_servers.empty() || changes.remap;
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
