#include "server/replica_order.h"

#include <glog/logging.h>

#include "common/cereal_body.h"
#include "common/codec.h"

namespace tteps::server {

ReplicaOrder::ReplicaOrder(const ClusterMap& map, int id)
    : id_(id),
      epoch_(map.epoch),
      fingerprint_(map.fingerprint),
      workers_(map.workers.size()),
      group_(ReplicasOf(map, id)) {}

bool ReplicaOrder::Link(std::function<bool(int, const Header&)> send, bool sync) {
  if (sync || group_.size() < 2) return false;
  send_ = std::move(send);
  // A backup keeps a few pushes per worker while its primary's entries are on their way.
  queue_ = std::make_unique<PushOrder>(static_cast<int>(workers_), 16 * (workers_ + 2));
  return true;
}

int ReplicaOrder::Primary() const {
  for (int s : group_) {
    if (!lost_.count(s)) return s;
  }
  return -1;
}

void ReplicaOrder::Name(int sender, int slot, int64_t count) {
  Header o;
  o.type = MsgType::kOrder;
  o.sender_role = Role::kServer;
  o.sender_id = id_;
  o.epoch = epoch_;
  o.fingerprint = fingerprint_;
  OrderEntry entry;
  entry.seq = next_seq_++;
  entry.sender = sender;
  entry.slot = slot;
  entry.kind = count == PushOrder::kDropped ? OrderEntry::kDropped
               : count < 0                  ? OrderEntry::kRejoined
                                            : OrderEntry::kPush;
  entry.count = entry.kind == OrderEntry::kRejoined ? PushOrder::RejoinClock(count) : count;
  o.text = EncodeCereal(entry);
  for (int s : group_) {
    if (s == id_ || lost_.count(s)) continue;
    LOG_IF(ERROR, !send_(s, o)) << "server " << id_ << ": the order of push " << entry.seq
                                << " could not be sent to server " << s;
  }
}

bool ReplicaOrder::LoseServer(int s) {
  const bool followed = following();
  if (!queue_ || !lost_.insert(s).second) return false;
  return followed && Primary() == id_;
}

ReplicaOrder::Received ReplicaOrder::Receive(const Message& m, std::string* why) {
  const Header& h = m.header;
  // Not answered: the primary does not read its links.
  if (!queue_ || h.sender_role != Role::kServer || h.sender_id != Primary() || h.sender_id == id_ ||
      h.epoch != epoch_ || h.fingerprint != fingerprint_) {
    *why = "an order from " + std::string(RoleName(h.sender_role)) + " " +
           std::to_string(h.sender_id) + ", which is not this range's primary (" +
           std::to_string(Primary()) + ")";
    return Received::kRefused;
  }
  if (broken_) return Received::kIgnored;
  OrderEntry e;
  try {
    e = DecodeCereal<OrderEntry>(h.text);
  } catch (const CodecError& err) {
    *why = std::string("an order of the primary: ") + err.what();
    return Received::kRefused;
  }
  const int64_t count = e.kind == OrderEntry::kDropped    ? PushOrder::kDropped
                        : e.kind == OrderEntry::kRejoined ? PushOrder::Rejoined(e.count)
                                                          : e.count;
  if ((e.kind == OrderEntry::kPush && e.count < 0) ||
      (e.kind == OrderEntry::kRejoined && e.count < 0) ||
      !queue_->AddOrder(e.seq, e.sender, e.slot, count)) {
    LOG(ERROR) << "server " << id_ << ": entry " << e.seq << " of the primary's order "
               << "(expected " << queue_->next_seq() << ", slot " << e.slot
               << ") breaks its stream; this replica applies pushes as they arrive from now on "
               << "and may no longer be bit-identical to its primary";
    broken_ = true;
    return Received::kBroken;
  }
  return Received::kAdded;
}

}  // namespace tteps::server
