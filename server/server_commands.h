// The scheduler's commands to a server, as one queue: the control channel's thread puts them
// in (server_main.cc's Listen: what each membership view changes, common/view.h, a rollback's
// new map among it), the serving loop takes them out in arrival order between requests
// (ParamServer::Run). The global norms of clipped sync steps wait apart, by version, until the
// shard asks for its step's.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "common/cluster_map.h"
#include "common/view.h"

namespace tteps::server {

struct ServerCommand {
  enum Kind {
    kWorkerLost,    // `worker` was declared lost
    kServerLost,    // `server` was declared lost (--replicas: another holds its range)
    kWorkerJoined,  // async / SSP: `worker` takes lost worker `slot`'s place at `clock` pushes
    kRollback,      // a lost server without a replica: serve the map under `remap` from its
                    // checkpoint on
  };
  Kind kind = kWorkerLost;
  int worker = -1, server = -1, slot = -1;
  int64_t clock = 0;
  ServerRemap remap;
};

class ServerCommands {
 public:
  // What `view` changes for this server, as commands in that order: a rollback, workers lost,
  // places taken by joiners, servers lost. Returns whether a peer was lost (a rollback's too).
  bool Follow(const View& view);
  // The commands in arrival order, up to and including the first rollback.
  std::vector<ServerCommand> Take();
  void PutNorm(int64_t version, double norm);
  // The global norm of `version`, once the scheduler sent it (taken: asked once).
  std::optional<double> TakeNorm(int64_t version);
  // A rollback: the norms of versions that will be computed again go.
  void ClearNorms();

 private:
  std::mutex mu_;
  std::deque<ServerCommand> queue_;
  ViewFollower follower_;
  std::map<int64_t, double> norms_;  // version -> global norm
};

}  // namespace tteps::server
