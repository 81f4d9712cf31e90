// The stream of a range's order between its replicas (async and SSP with --replicas;
// server/push_order.h): who leads it (the range's first server not lost), the entries a primary
// names to its backups, and the entries a backup receives. Applying what the stream allows is
// the server's (server/param_server.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/cluster_map.h"
#include "common/transport.h"
#include "server/push_order.h"

namespace tteps::server {

class ReplicaOrder {
 public:
  ReplicaOrder(const ClusterMap& map, int id);
  // Starts the stream where this server's range has replicas; `send(server, order)` sends an
  // entry to another server. Returns whether it did (never in sync mode: a step sums in worker
  // order).
  bool Link(std::function<bool(int server, const Header& order)> send, bool sync);
  // The range's first server not lost (-1: none).
  int Primary() const;
  // Pushes are applied in the primary's order (the stream is linked and whole).
  bool ordered() const { return queue_ && !broken_; }
  // A backup applies pushes where the stream names them; a primary names them.
  bool following() const { return ordered() && Primary() != id_; }
  bool leading() const { return ordered() && Primary() == id_; }
  // A backup's pushes held for the stream, and its entries (null: not linked).
  PushOrder* queue() { return queue_.get(); }
  // A primary names to its backups that `sender`'s push made `slot`'s count `count`, or
  // (PushOrder::kDropped) that it dropped the slot, or (PushOrder::Rejoined) gave it to `sender`.
  void Name(int sender, int slot, int64_t count);
  // Server `s` was lost. True if this server led no stream before and leads it now.
  bool LoseServer(int s);
  // A backup receives an entry (a kOrder message). kRefused: it is not its primary's (`why`
  // says so); kIgnored: the stream broke before; kBroken: the entry does not continue the stream,
  // which breaks here (the caller applies what the queue held, in arrival order, from now on).
  enum class Received { kAdded, kRefused, kIgnored, kBroken };
  Received Receive(const Message& m, std::string* why);

 private:
  int id_;
  int64_t epoch_;
  uint64_t fingerprint_;
  size_t workers_;
  std::vector<int> group_;  // the servers of this range
  std::set<int> lost_;      // those lost
  std::function<bool(int, const Header&)> send_;
  std::unique_ptr<PushOrder> queue_;  // non-null: linked
  uint64_t next_seq_ = 0;             // the primary's next entry
  bool broken_ = false;               // a gap in the primary's stream: arrival order from then
};

}  // namespace tteps::server
