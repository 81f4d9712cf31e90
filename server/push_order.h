// Async and SSP with --replicas: a range's backups apply the pushes its primary applied, in the
// primary's order, so that the replicas' shards stay bit-identical. (Sync needs none of this: a
// step sums its slices in worker order, whatever order they arrive in.)
//
// Every push goes to every replica (the client fans it out, and each replica acknowledges it
// once it holds it). The primary applies pushes as they arrive and names each one, in one stream
// of kOrder messages, by its worker and that worker's count of pushes after it; a worker it
// dropped is named in the stream too. A worker's pushes reach a server in the order it sent
// them, so (worker, count) names one push. A backup keeps the pushes it received until the stream
// names them. Pure logic, no sockets.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "common/transport.h"

namespace tteps::server {

class PushOrder {
 public:
  // `max_held`: pushes kept at most (a bound against a primary that stopped naming them).
  PushOrder(int num_workers, size_t max_held);

  // A push received from `worker` (index checked by the caller), in arrival order. False if
  // max_held are kept already.
  bool AddPush(int worker, Message m);
  // The primary's next entry: worker `worker`'s push that made its count `count`, or the worker
  // dropped (count < 0). Entries come in stream order; `seq` numbers them from 0. False for an
  // entry out of sequence (a gap: one was lost), of a worker out of range, or past a bound of
  // 16 x max_held entries waiting.
  bool AddOrder(uint64_t seq, int worker, int64_t count);

  // The stream's next entry not taken (null: none). count < 0: the worker was dropped.
  struct Entry {
    int worker;
    int64_t count;
  };
  const Entry* Front() const { return orders_.empty() ? nullptr : &orders_.front(); }
  void PopFront();
  bool HasPush(int worker) const { return !pushes_.at(static_cast<size_t>(worker)).empty(); }
  // The oldest push kept of `worker` (HasPush first).
  Message PopPush(int worker);
  // Another primary's stream begins (the one before was lost): its entries count from 0 again.
  void Restart();

  // Promotion to primary: every push still kept, in arrival order, with its worker; the stream's
  // entries not taken are forgotten.
  std::vector<std::pair<int, Message>> TakeAll();
  size_t held() const { return held_; }
  size_t orders() const { return orders_.size(); }
  uint64_t next_seq() const { return next_seq_; }

 private:
  struct Kept {
    uint64_t arrival = 0;
    int worker = -1;
    Message m;
  };
  std::vector<std::deque<Kept>> pushes_;  // by worker, in arrival order
  std::deque<Entry> orders_;
  size_t held_ = 0, max_held_;
  uint64_t arrivals_ = 0, next_seq_ = 0;
};

}  // namespace tteps::server
