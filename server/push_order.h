// Async and SSP with --replicas: a range's backups apply the pushes its primary applied, in the
// primary's order, so that the replicas' shards stay bit-identical. (Sync needs none of this: a
// step sums its slices in worker order, whatever order they arrive in.)
//
// Every push goes to every replica (the client fans it out, and each replica acknowledges it
// once it holds it). The primary applies pushes as they arrive and names each one, in one stream
// of kOrder messages, by its sender, the worker slot it counts for (a joiner's is a lost
// worker's) and that slot's count of pushes after it; a slot it dropped or gave to a joiner is
// named in the stream too. A sender's pushes reach a server in the order it sent them, so the
// stream names the oldest push kept of that sender. A backup keeps the pushes it received until
// the stream names them. Pure logic, no sockets.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "common/transport.h"

namespace tteps::server {

// One entry of a primary's stream, the body of a kOrder message: entry `seq` says that
// `sender`'s push made slot `slot`'s count `count` (kPush), or that the primary dropped the slot
// there (kDropped), or gave it to joiner `sender` at clock `count` (kRejoined).
struct OrderEntry {
  enum Kind : uint8_t { kPush = 0, kDropped = 1, kRejoined = 2 };
  uint64_t seq = 0;
  int32_t sender = 0, slot = 0;
  Kind kind = kPush;
  int64_t count = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(seq, sender, slot, kind, count);
  }
};

class PushOrder {
 public:
  // `num_workers`: the worker slots; `max_held`: pushes kept at most (a bound against a
  // primary that stopped naming them).
  PushOrder(int num_workers, size_t max_held);

  // A push received from `sender`, in arrival order. False if max_held are kept already.
  bool AddPush(int sender, Message m);
  // Marks of the stream's entries: the slot was dropped, or taken by a joiner at a clock.
  static constexpr int64_t kDropped = -1;
  static int64_t Rejoined(int64_t clock) { return -2 - clock; }
  static int64_t RejoinClock(int64_t count) { return -2 - count; }
  // The primary's next entry: `sender`'s push that made slot `slot`'s count `count` (or a mark,
  // count < 0). Entries come in stream order; `seq` numbers them from 0. False for an entry out
  // of sequence (a gap: one was lost), of a slot out of range, or past a bound of
  // 16 x max_held entries waiting.
  bool AddOrder(uint64_t seq, int sender, int slot, int64_t count);

  // The stream's next entry not taken (null: none).
  struct Entry {
    int sender;
    int slot;
    int64_t count;
  };
  const Entry* Front() const { return orders_.empty() ? nullptr : &orders_.front(); }
  void PopFront();
  bool HasPush(int sender) const;
  // The oldest push kept of `sender` (HasPush first).
  Message PopPush(int sender);
  // Another primary's stream begins (the one before was lost): its entries count from 0 again.
  void Restart();

  // Promotion to primary: every push still kept, in arrival order, with its sender; the
  // stream's entries not taken are forgotten.
  std::vector<std::pair<int, Message>> TakeAll();
  size_t held() const { return held_; }
  size_t orders() const { return orders_.size(); }
  uint64_t next_seq() const { return next_seq_; }

 private:
  struct Kept {
    uint64_t arrival = 0;
    int sender = -1;
    Message m;
  };
  int num_workers_;
  std::map<int, std::deque<Kept>> pushes_;  // by sender, in arrival order
  std::deque<Entry> orders_;
  size_t held_ = 0, max_held_;
  uint64_t arrivals_ = 0, next_seq_ = 0;
};

}  // namespace tteps::server
