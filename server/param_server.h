// The parameter server's event loop, in the manner of ps-lite's KVServer: it receives init,
// push and pull requests on its ROUTER socket, validates each, lets the Shard apply the
// consistency model, and answers. A malformed or mismatched request gets an error reply and a
// log line; the server keeps serving.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/busy_peers.h"
#include "common/cluster_map.h"
#include "common/control_channel.h"
#include "common/topics/server_stats.h"
#include "common/trace.h"
#include "common/transport.h"
#include "server/held_requests.h"
#include "server/pull_queue.h"
#include "server/replica_order.h"
#include "server/server_commands.h"
#include "server/server_replies.h"
#include "server/shard.h"
#include "server/wire_values.h"
#include "server/worker_places.h"

namespace tteps::server {

class ParamServer {
 public:
  ParamServer(zmq::socket_t& socket, const ClusterMap& map, int id, Shard* shard, double timeout_s);
  // Called after a push made a new version (checkpoints hang here).
  void OnNewVersion(std::function<void(int64_t version)> hook) { on_version_ = std::move(hook); }
  // --trace: a span per applied push (null: none).
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }
  // When a worker was last seen computing (the scheduler's heartbeat answers): a pull held for
  // it waits --timeout_s from then, not from its arrival (common/busy_peers.h). Unset: from the
  // arrival.
  void set_busy_seen(BusySeen seen) { pulls_.set_busy_seen(std::move(seen)); }
  // Clipping in sync mode: `send` hands this shard's squared norm of a completed aggregate to
  // the scheduler; `take` returns the global norm once the scheduler has answered.
  void SetNormExchange(std::function<void(int64_t version, double squared)> send,
                       std::function<std::optional<double>(int64_t version)> take) {
    norm_.send = std::move(send);
    norm_.take = std::move(take);
  }
  // Async / SSP with --replicas: `send(server, order)` sends a kOrder to another server of
  // this range, and the range's replicas apply pushes in its primary's order
  // (server/push_order.h), so that they stay bit-identical. Without it each applies pushes as
  // they arrive.
  void SetOrderLink(std::function<bool(int server, const Header& order)> send);
  // The scheduler declared worker `w` lost: its clock no longer holds pulls back (SSP) and its
  // late pushes are refused; sync: its slice comes from another worker. A backup following its
  // primary's order drops it where the order says. Throws std::invalid_argument as Shard does.
  void DropWorker(int w);
  // Async / SSP: worker `joiner` joined in lost worker `slot`'s place, with `clock` pushes
  // counted; its pushes count for that slot (held until this word came).
  void Rejoin(int slot, int joiner, int64_t clock);
  // The scheduler declared server `s` lost. A backup whose primary it was becomes the primary.
  void LoseServer(int s);
  // A backup applying pushes in its primary's order.
  bool following() const { return order_.following(); }

  // Serves until `stop` returns true (checked every few milliseconds) or a rollback comes from
  // `commands` (its new map's servers returned; the commands before it are applied between
  // requests). A backup then waits a little for its primary's last entries.
  std::optional<ServerRemap> Run(const std::function<bool()>& stop,
                                 ServerCommands* commands = nullptr);
  // One of the scheduler's commands other than a rollback.
  void Apply(const ServerCommand& c);
  // What a rollback carries to the next epoch's server: the workers declared lost (their ids)
  // and the joiners' places (slot -> joiner).
  struct Carried {
    std::vector<int> dropped;
    std::map<int, int> joiners;
  };
  const Carried& carried() const { return carried_; }
  // The server of a rollback's epoch: drops those lost before and gives the joiners their
  // places again, from the checkpoint's clocks (after SetOrderLink).
  void Carry(const Carried& carried);
  // Handles one received message (exposed for tests): validate the request, then a push is
  // admitted under the membership, held for its primary's order (a backup) or applied.
  void Handle(Message& m);
  // Answers the pulls that can be answered, and fails those waiting past the timeout.
  void ServePending();

  // Counts, version and staleness histogram, for the scheduler's summary.json.
  ServerStats Stats() const;
  int64_t errors() const { return replies_.errors(); }
  // Requests of a later epoch of the cluster map, held: their node heard of a rollback before
  // this server did. The server of that epoch handles them first.
  std::vector<Message> TakeHeld() { return later_epoch_.Take(); }

 private:
  void HandlePush(Message& m);
  // Throws std::invalid_argument (and counts it) if the payload holds a NaN or infinity: a
  // push or init that would poison the model is refused whoever sent it.
  void CheckFinite(const Message& m, const char* what);
  // Whether the membership admits a push and of which slice: a lost worker's is refused
  // (throws), a joiner's before its place is given and one of the next version while this one
  // waits for its norm or (sync) its last push are held, an adopted slice's copy of a complete
  // slice counted already.
  enum class Admission { kAdmitted, kHeld, kCounted };
  Admission AdmitPush(Message& m, int* slice);
  // A sync push of another worker's slice (h.slice): whether that slice is complete already
  // (the copy is acknowledged, not counted). Throws std::invalid_argument if it may not be.
  bool AdoptedSliceIsIn(const Header& h, int slice);
  // Keeps a message until an event (`what` says which), or refuses it past the bound.
  void Hold(Message& m, HeldRequests* into, const std::string& what);
  // Applies a validated push of `slice`'s gradient; returns the version before it. The primary
  // of ordered replicas names it to its backups.
  int64_t ApplyPush(Message& m, int slice);
  void AfterPush(int64_t version_before);
  void PollNorm();
  // A push held for the order: applied, or refused with a log line (it was acknowledged).
  void ApplyHeld(Message& m, int slot, const char* what);
  // A backup: an entry of its primary's order, and what the order allows now.
  void HandleOrder(const Message& m);
  void ApplyOrdered();
  // A backup whose primary was lost: applies what it holds, in arrival order, and leads.
  void Promote();
  std::string WorkerName(int w) const;
  int workers() const { return static_cast<int>(map_.workers.size()); }

  struct Counts {
    int64_t pushes = 0, pulls = 0, non_finite = 0;
    std::map<int64_t, int64_t> staleness;  // staleness -> pushes
  };
  struct NormLink {
    std::function<void(int64_t, double)> send;
    std::function<std::optional<double>(int64_t)> take;
  };

  zmq::socket_t& socket_;
  ServerReplies replies_;
  ClusterMap map_;
  int id_;
  Shard* shard_;
  PullQueue pulls_;
  std::function<void(int64_t)> on_version_;
  NormLink norm_;
  HeldRequests later_epoch_;  // requests of a later epoch
  HeldRequests after_norm_;   // pushes of the next version, while this one waits for its norm
  HeldRequests ahead_;        // sync: pushes of the next version, while this one waits for a push
  HeldRequests before_join_;  // a joiner's pushes before the scheduler's word that it joined
  Counts counts_;
  int64_t max_push_trips_;
  Tracer* tracer_ = nullptr;
  ReplicaOrder order_;   // --replicas in async and SSP: the range's order
  WorkerPlaces places_;  // the workers lost, the joiners' places
  Carried carried_;
  WireValues values_;
};

}  // namespace tteps::server
