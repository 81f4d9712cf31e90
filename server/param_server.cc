#include "server/param_server.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>

#include "common/bf16.h"
#include "common/cereal_body.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/json_writer.h"
#include "common/log_file.h"
#include "common/numerics.h"
#include "common/peak_memory.h"

namespace tteps::server {

ParamServer::ParamServer(zmq::socket_t& socket, const ClusterMap& map, int id, Shard* shard,
                         double timeout_s)
    : socket_(socket),
      map_(map),
      id_(id),
      shard_(shard),
      timeout_s_(timeout_s),
      max_push_trips_(map.config.MaxPushTrips()) {}

std::string ParamServer::WorkerName(int w) const {
  return w >= 0 && w < static_cast<int>(map_.workers.size()) ? map_.workers[w].Name()
                                                             : "worker " + std::to_string(w);
}

std::optional<ClusterMap> ParamServer::Run(const std::function<bool()>& stop,
                                           ServerCommands* commands) {
  const auto serve_once = [&] {
    Message m;
    std::string peer;
    try {
      // A step waiting for its global norm (from the control channel's thread) looks often.
      const long wait_ms = shard_->awaiting_norm() ? 1 : 10;
      if (ReceiveMessage(socket_, /*router=*/true, wait_ms, &m, &peer)) Handle(m);
    } catch (const CodecError& e) {
      Header unknown;
      ReplyError(peer, unknown, std::string("malformed message: ") + e.what());
    }
    PollNorm();
    ServePending();
  };
  std::optional<ClusterMap> rollback;
  while (!stop()) {
    for (ServerCommand& c : commands ? commands->Take() : std::vector<ServerCommand>{}) {
      if (c.kind == ServerCommand::kRollback) {
        rollback = std::move(c.map);
      } else {
        Apply(c);
      }
    }
    if (rollback) break;
    serve_once();
  }
  // The primary named each push as it acknowledged it, so its last entries are on their way.
  const auto until = Clock::now() + std::chrono::seconds(2);
  while (following() && order_->held() > 0 && Clock::now() < until) serve_once();
  LOG_IF(WARNING, following() && order_->held() > 0)
      << "server " << id_ << ": " << order_->held()
      << " pushes held for the primary's order were never named by it; not applied";
  return rollback;
}

void ParamServer::Apply(const ServerCommand& c) {
  switch (c.kind) {
    case ServerCommand::kServerLost:
      LOG(WARNING) << "server " << id_ << ": server " << c.server
                   << " was declared lost; its replicas serve its range";
      return LoseServer(c.server);
    case ServerCommand::kWorkerJoined:
      Rejoin(c.slot, c.worker, c.clock);
      carried_.joiners[c.slot] = c.worker;
      return;
    case ServerCommand::kWorkerLost:
      try {
        DropWorker(c.worker);
      } catch (const std::invalid_argument& e) {
        LOG(ERROR) << "server " << id_ << ": " << e.what();
        return;
      }
      carried_.dropped.push_back(c.worker);
      for (auto it = carried_.joiners.begin(); it != carried_.joiners.end();) {
        it = it->second == c.worker ? carried_.joiners.erase(it) : std::next(it);
      }
      LOG(WARNING) << "server " << id_ << ": worker " << c.worker << " was declared lost; "
                   << (shard_->consistency() == Consistency::kSync
                           ? "its slice comes from another worker"
                       : following() ? "dropped where the primary's order says"
                                     : "its clock no longer holds pulls back");
      return;
    case ServerCommand::kRollback:
      return;  // Run's to handle
  }
}

void ParamServer::Carry(const Carried& carried) {
  carried_ = carried;
  for (int w : carried.dropped) {
    if (w < static_cast<int>(map_.workers.size())) shard_->DropWorker(w);
  }
  // After a rollback the joiners push again from the checkpoint's clocks of their places.
  for (const auto& [slot, joiner] : carried.joiners) Rejoin(slot, joiner, shard_->clock(slot));
}

void ParamServer::SetOrderLink(std::function<bool(int, const Header&)> send) {
  group_ = ReplicasOf(map_, id_);
  if (shard_->consistency() == Consistency::kSync || group_.size() < 2) return;
  send_order_ = std::move(send);
  // A backup keeps a few pushes per worker while its primary's entries are on their way.
  order_ = std::make_unique<PushOrder>(static_cast<int>(map_.workers.size()),
                                       16 * (map_.workers.size() + 2));
  LOG(INFO) << "server " << id_
            << ": replicas apply pushes in the order of their primary, now server " << Primary();
}

int ParamServer::Primary() const {
  for (int s : group_) {
    if (!lost_servers_.count(s)) return s;
  }
  return -1;
}

bool ParamServer::following() const { return order_ && !order_broken_ && Primary() != id_; }

int ParamServer::SlotOf(int worker) const {
  if (worker >= 0 && worker < static_cast<int>(map_.workers.size())) return worker;
  for (const auto& [slot, joiner] : joined_) {
    if (joiner == worker) return slot;
  }
  return -1;
}

void ParamServer::SendOrder(int sender, int slot, int64_t count) {
  Header o;
  o.type = MsgType::kOrder;
  o.sender_role = Role::kServer;
  o.sender_id = id_;
  o.epoch = map_.epoch;
  o.fingerprint = map_.fingerprint;
  OrderEntry entry;
  entry.seq = order_seq_++;
  entry.sender = sender;
  entry.slot = slot;
  entry.kind = count == PushOrder::kDropped ? OrderEntry::kDropped
               : count < 0                  ? OrderEntry::kRejoined
                                            : OrderEntry::kPush;
  entry.count = entry.kind == OrderEntry::kRejoined ? PushOrder::RejoinClock(count) : count;
  o.text = EncodeCereal(entry);
  for (int s : group_) {
    if (s == id_ || lost_servers_.count(s)) continue;
    LOG_IF(ERROR, !send_order_(s, o))
        << "server " << id_ << ": the order of push " << entry.seq << " could not be sent to "
        << "server " << s;
  }
}

void ParamServer::HandleOrder(const Message& m) {
  const Header& h = m.header;
  // Not answered: the primary does not read its links.
  if (!order_ || h.sender_role != Role::kServer || h.sender_id != Primary() || h.sender_id == id_ ||
      h.epoch != map_.epoch || h.fingerprint != map_.fingerprint) {
    return ReplyError("", h,
                      "an order from " + std::string(RoleName(h.sender_role)) + " " +
                          std::to_string(h.sender_id) + ", which is not this range's primary (" +
                          std::to_string(Primary()) + ")");
  }
  if (order_broken_) return;
  OrderEntry e;
  try {
    e = DecodeCereal<OrderEntry>(h.text);
  } catch (const CodecError& err) {
    return ReplyError("", h, std::string("an order of the primary: ") + err.what());
  }
  const int64_t count = e.kind == OrderEntry::kDropped    ? PushOrder::kDropped
                        : e.kind == OrderEntry::kRejoined ? PushOrder::Rejoined(e.count)
                                                          : e.count;
  if ((e.kind == OrderEntry::kPush && e.count < 0) ||
      (e.kind == OrderEntry::kRejoined && e.count < 0) ||
      !order_->AddOrder(e.seq, e.sender, e.slot, count)) {
    LOG(ERROR) << "server " << id_ << ": entry " << e.seq << " of the primary's order "
               << "(expected " << order_->next_seq() << ", slot " << e.slot
               << ") breaks its stream; this replica applies pushes as they arrive from now on "
               << "and may no longer be bit-identical to its primary";
    order_broken_ = true;
    for (auto& [sender, held] : order_->TakeAll()) {
      ApplyHeld(held, held.header.slice >= 0 ? held.header.slice : sender, "a held push");
    }
    return;
  }
  ApplyOrdered();
}

void ParamServer::ApplyOrdered() {
  while (const PushOrder::Entry* e = order_->Front()) {
    const int sender = e->sender, slot = e->slot;
    const int64_t count = e->count;
    if (count == PushOrder::kDropped) {  // the primary dropped the slot here
      order_->PopFront();
      if (!shard_->dropped(slot)) shard_->DropWorker(slot);
      const auto j = joined_.find(slot);
      if (j != joined_.end() && j->second == sender) joined_.erase(j);  // a lost joiner's
      continue;
    }
    if (count < 0) {  // ... or gave it to a worker that joined (the entry's sender)
      order_->PopFront();
      shard_->Rejoin(slot, PushOrder::RejoinClock(count));
      pending_rejoins_.erase(slot);
      joined_[slot] = sender;
      rejoined_.insert(sender);
      continue;
    }
    if (shard_->clock(slot) >= count) {  // applied already, named by a primary lost since
      order_->PopFront();
      continue;
    }
    if (!order_->HasPush(sender)) {
      if (!lost_workers_.count(sender)) return;  // on its way
      // Lost between its sends to the primary and to this server: it will never come.
      LOG(ERROR) << "server " << id_ << ": the primary applied a push of lost worker " << sender
                 << " that never reached this server; the replicas differ from here on";
      order_->PopFront();
      continue;
    }
    Message m = order_->PopPush(sender);
    order_->PopFront();
    LOG_IF(ERROR, shard_->clock(slot) + 1 != count)
        << "server " << id_ << ": the primary's push of worker " << sender << " made slot " << slot
        << "'s count " << count << ", here " << shard_->clock(slot) + 1;
    ApplyHeld(m, slot, "the primary applied a push that this server refuses");
  }
}

void ParamServer::ApplyHeld(Message& m, int slot, const char* what) {
  decoded_for_ = nullptr;  // another message may have lived at m's address
  try {
    AfterPush(ApplyPush(m, slot));
  } catch (const std::exception& e) {
    LOG(ERROR) << "server " << id_ << ": " << what << " (worker " << m.header.sender_id
               << "): " << e.what();
  }
}

void ParamServer::DropWorker(int w) {
  lost_workers_.insert(w);
  const int slot = SlotOf(w);
  if (slot < 0) return;  // a joiner of a sync job: its slice comes from another worker
  const auto j = joined_.find(slot);
  if (j != joined_.end() && j->second != w) return;  // the slot's joiner lives on
  // A backup drops the slot (and forgets its joiner) where the primary's order says.
  if (following()) return ApplyOrdered();
  if (j != joined_.end()) joined_.erase(j);
  shard_->DropWorker(slot);
  if (order_ && !order_broken_) SendOrder(w, slot, PushOrder::kDropped);
}

void ParamServer::Rejoin(int slot, int joiner, int64_t clock) {
  if (shard_->consistency() == Consistency::kSync || slot < 0 ||
      slot >= static_cast<int>(map_.workers.size()) || clock < 0) {
    LOG(ERROR) << "server " << id_ << ": worker " << joiner << " cannot take worker " << slot
               << "'s place (async and SSP only)";
    return;
  }
  joined_[slot] = joiner;
  LOG(WARNING) << "server " << id_ << ": worker " << joiner << " takes worker " << slot
               << "'s place from its push " << clock + 1 << " on";
  if (following()) {
    // Where the primary's order says, unless its entry came first.
    if (!rejoined_.count(joiner)) pending_rejoins_[slot] = clock;
    ApplyOrdered();
  } else {
    shard_->Rejoin(slot, clock);
    rejoined_.insert(joiner);
    if (order_ && !order_broken_) SendOrder(joiner, slot, PushOrder::Rejoined(clock));
  }
  for (Message& m : before_join_.Take()) Handle(m);
}

void ParamServer::LoseServer(int s) {
  const bool followed = following();
  if (!order_ || !lost_servers_.insert(s).second) return;
  if (followed && Primary() == id_) Promote();
}

void ParamServer::Promote() {
  order_->Restart();
  auto held = order_->TakeAll();
  LOG(WARNING) << "server " << id_ << " is its range's primary now; it applies the " << held.size()
               << " pushes its primary never named, in arrival order";
  // The joiners' places first: their pushes count for the slots they took.
  for (const auto& [slot, clock] : pending_rejoins_) {
    const auto j = joined_.find(slot);
    if (j == joined_.end()) continue;
    shard_->Rejoin(slot, clock);
    rejoined_.insert(j->second);
    SendOrder(j->second, slot, PushOrder::Rejoined(clock));
  }
  pending_rejoins_.clear();
  for (auto& [sender, m] : held) {
    if (lost_workers_.count(sender)) continue;  // refused from its loss on
    ApplyHeld(m, m.header.slice >= 0 ? m.header.slice : sender, "a held push");
  }
  // The losses its primary had not ordered yet: the slot of a lost worker, or of a lost joiner.
  for (int w : lost_workers_) {
    const int slot = SlotOf(w);
    if (slot < 0 || shard_->dropped(slot)) continue;
    const auto j = joined_.find(slot);
    if (j != joined_.end() && j->second != w) continue;  // its place is another's now
    if (j != joined_.end()) joined_.erase(j);
    shard_->DropWorker(slot);
    SendOrder(w, slot, PushOrder::kDropped);
  }
}

void ParamServer::ReplyError(const std::string& peer, const Header& request,
                             const std::string& what) {
  ++errors_;
  LOG_IF(ERROR, LogThisRefusal(errors_))
      << "server " << id_ << ": rejected " << TypeName(request.type) << " from "
      << RoleName(request.sender_role) << " " << request.sender_id << ": " << what << " ("
      << errors_ << " refused so far)";
  if (peer.empty()) return;
  Header h;
  h.type = MsgType::kError;
  h.sender_role = Role::kServer;
  h.sender_id = id_;
  h.request_id = request.request_id;
  h.text = what;
  SendMessage(socket_, h, {}, peer);
}

void ParamServer::Reply(const std::string& peer, const Header& request, MsgType type) {
  Header h;
  h.type = type;
  h.sender_role = Role::kServer;
  h.sender_id = id_;
  h.request_id = request.request_id;
  h.step = shard_->version();
  if (!SendMessage(socket_, h, {}, peer)) NoteDropped(request);
}

void ParamServer::NoteDropped(const Header& request) {
  ++dropped_;
  LOG_IF(WARNING, LogThisRefusal(dropped_))
      << "server " << id_ << ": reply to " << TypeName(request.type) << " of "
      << RoleName(request.sender_role) << " " << request.sender_id
      << " dropped: the peer is gone or does not read (" << dropped_ << " so far)";
}

bool ParamServer::AdoptedSliceIsIn(const Header& h, int slice) {
  if (shard_->consistency() != Consistency::kSync || h.more || slice < 0 ||
      slice >= SliceCount(map_)) {
    throw std::invalid_argument("a push of slice " + std::to_string(slice) + " from worker " +
                                std::to_string(h.sender_id) +
                                " (another worker's slice comes whole, in sync mode only)");
  }
  // The scheduler's word that the slice's worker is lost may reach this server after the
  // slice does: the push says so too.
  if (!shard_->dropped(slice)) {
    LOG(WARNING) << "server " << id_ << ": worker " << h.sender_id << " pushes the slice of worker "
                 << slice << ", which is taken as lost";
    shard_->DropWorker(slice);
  }
  // Complete already (its worker pushed it before it was lost, and the step may be over):
  // the copy is the same gradient, computed on the same weights from the same trips.
  // (or every slice is in and the step waits for its global norm, with clipping)
  if (h.step < shard_->version() || shard_->pushed(slice) ||
      (shard_->awaiting_norm() && h.step == shard_->version())) {
    LOG(INFO) << "server " << id_ << ": slice " << slice << " of version " << h.step
              << " was complete; worker " << h.sender_id << "'s copy is not counted again";
    return true;
  }
  return false;
}

void ParamServer::Handle(Message& m) {
  decoded_for_ = nullptr;  // a new message, perhaps at the old one's address
  const Header& h = m.header;
  const bool data =
      h.type == MsgType::kInit || h.type == MsgType::kPush || h.type == MsgType::kPull;
  const bool order = h.type == MsgType::kOrder;
  if (!data && !order) return ReplyError(m.peer, h, std::string("unexpected ") + TypeName(h.type));
  // A primary's order too: its stream of the new epoch starts before this server has rolled back.
  if (h.epoch > map_.epoch) {
    return Hold(m, &later_epoch_,
                "a request of epoch " + std::to_string(h.epoch) + " while this server serves " +
                    std::to_string(map_.epoch) + " (until it has rolled back too)");
  }
  if (order) return HandleOrder(m);
  if (std::string why = RequestProblem(h); !why.empty()) return ReplyError(m.peer, h, why);
  try {
    switch (h.type) {
      case MsgType::kInit:
        CheckFinite(m, "initial values");
        if (!shard_->initialized()) shard_->Init(Values(m));
        Reply(m.peer, h, MsgType::kInitAck);
        break;
      case MsgType::kPush:
        HandlePush(m);
        break;
      case MsgType::kPull:
        ++pulls_;
        pending_.push_back({m.peer, h, Clock::now()});
        break;
      default:
        break;
    }
  } catch (const std::exception& e) {
    ReplyError(m.peer, h, e.what());  // refused; the server keeps serving
  }
}

std::string ParamServer::RequestProblem(const Header& h) const {
  if (h.epoch < map_.epoch) {  // sent before a rollback, or by a node that missed it
    return "a request of epoch " + std::to_string(h.epoch) + "; this server serves " +
           std::to_string(map_.epoch) + " (each rollback starts a new one)";
  }
  if (h.fingerprint != map_.fingerprint) {
    return "parameter layout fingerprint " + std::to_string(h.fingerprint) +
           " does not match the job's " + std::to_string(map_.fingerprint);
  }
  if (h.step < 0) return "negative step " + std::to_string(h.step);
  // A request names all of this server's keys (dense) or some of them (sparse rows); an init
  // names all.
  const bool whole = h.ranges.size() == 1 && h.ranges[0] == shard_->range();
  if ((h.type == MsgType::kInit && !whole) || !CheckSpans(h.ranges, shard_->range()).empty()) {
    return "this server holds " + shard_->range().ToString() + ", the request names other keys";
  }
  return "";
}

void ParamServer::HandlePush(Message& m) {
  CheckPush(m);
  int slice = -1;
  switch (AdmitPush(m, &slice)) {
    case Admission::kHeld:
      return;
    case Admission::kCounted:
      return Reply(m.peer, m.header, MsgType::kPushAck);  // the same gradient is counted
    case Admission::kAdmitted:
      break;
  }
  if (following()) {
    // Held (and acknowledged: this replica has it) until the primary names it.
    const std::string peer = m.peer;
    const Header head = m.header;
    if (!order_->AddPush(head.sender_id, std::move(m))) {
      throw std::invalid_argument("too many pushes held for the primary's order");
    }
    Reply(peer, head, MsgType::kPushAck);
    return ApplyOrdered();
  }
  const int64_t before = ApplyPush(m, slice);
  Reply(m.peer, m.header, MsgType::kPushAck);
  AfterPush(before);
}

void ParamServer::CheckPush(const Message& m) {
  const Header& h = m.header;
  if (h.samples > max_push_trips_) {
    throw std::invalid_argument("push claims " + std::to_string(h.samples) +
                                " trips, more than a step can hold (" +
                                std::to_string(max_push_trips_) + ")");
  }
  if (!std::isfinite(h.norm)) throw std::invalid_argument("push with a non-finite norm");
  if (!(h.noise_sq >= 0 && h.noise_n2 >= 0 && std::isfinite(h.noise_sq) &&
        std::isfinite(h.noise_n2))) {
    throw std::invalid_argument("push with a negative or non-finite gradient noise");
  }
  CheckFinite(m, "gradient");
}

ParamServer::Admission ParamServer::AdmitPush(Message& m, int* slice) {
  const Header& h = m.header;
  const int workers = static_cast<int>(map_.workers.size());
  // --replicas with clipping: the worker pulled the next version from a replica that had its
  // global norm before this one had.
  if (shard_->awaiting_norm() && h.step > shard_->version()) {
    Hold(m, &after_norm_,
         "a push of version " + std::to_string(h.step) + " while version " +
             std::to_string(shard_->version()) + " waits for its global norm");
    return Admission::kHeld;
  }
  // Sync with --replicas: the worker pulled the next version from a replica that completed the
  // step first, while the step's last push is still on its way here (it comes over another
  // worker's connection, which ZeroMQ does not order with this one).
  if (shard_->consistency() == Consistency::kSync && h.step == shard_->version() + 1) {
    Hold(m, &ahead_,
         "a push of version " + std::to_string(h.step) + " while this server still collects " +
             std::to_string(shard_->version()));
    return Admission::kHeld;
  }
  *slice = h.slice >= 0 ? h.slice : h.sender_id;
  // Declared lost (and perhaps only stopped): refused, even once a joiner has its place. A
  // backup holds it instead (its primary may have applied it before the word came) unless the
  // primary's order dropped it. Sync: an adopter's copy may drop it first.
  const bool original = h.sender_id >= 0 && h.sender_id < workers;
  if ((original && shard_->dropped(h.sender_id)) ||
      (lost_workers_.count(h.sender_id) && !following())) {
    throw std::invalid_argument("worker " + std::to_string(h.sender_id) +
                                " was declared lost; its pushes are refused");
  }
  if (*slice == h.sender_id) return Admission::kAdmitted;
  if (shard_->consistency() == Consistency::kSync) {
    return AdoptedSliceIsIn(h, *slice) ? Admission::kCounted : Admission::kAdmitted;
  }
  // Async / SSP: a worker that joined pushes for the lost worker's place it took.
  const auto j = joined_.find(*slice);
  if (j != joined_.end() && j->second == h.sender_id) return Admission::kAdmitted;
  if (*slice >= 0 && *slice < workers && h.sender_id >= workers) {
    Hold(m, &before_join_,
         "a push of worker " + std::to_string(h.sender_id) + " for worker " +
             std::to_string(*slice) + "'s place, before the scheduler's word of it");
    return Admission::kHeld;
  }
  throw std::invalid_argument("worker " + std::to_string(h.sender_id) + " pushes for worker " +
                              std::to_string(*slice) + ", whose place it did not take");
}

int64_t ParamServer::ApplyPush(Message& m, int slice) {
  const Header& h = m.header;
  const int64_t before = shard_->version();
  int64_t stale = 0;
  {
    ScopedSpan span(tracer_, "apply push");
    stale = shard_->Push(slice, h.step, h.samples, h.ranges, Values(m), h.norm, h.more,
                         {h.noise_sq, h.noise_n2});
  }
  if (h.stop) shard_->RequestStop(h.step);
  if (!h.more) {  // a push counts once, however many parts it came in
    ++staleness_[stale];
    ++pushes_;
    if (order_ && !order_broken_ && Primary() == id_) {
      SendOrder(h.sender_id, slice, shard_->clock(slice));
    }
  }
  return before;
}

void ParamServer::Hold(Message& m, Held* into, const std::string& what) {
  // Bounded: a foreign message must not grow the server without limit. Until the event the
  // message waits for, each worker has at most one request in flight per server, or one
  // push's parts (it waits for their acknowledgement).
  size_t bytes = 0;
  for (const auto& p : m.payloads) bytes += p.size();
  const size_t max_bytes =
      static_cast<size_t>(map_.param_count) * sizeof(float) * (map_.workers.size() + 2) + 65536;
  if (into->messages.size() >= 64 * (map_.workers.size() + 2) || into->bytes + bytes > max_bytes) {
    return ReplyError(m.peer, m.header, what + ", and too many such held already");
  }
  LOG_IF(INFO, into->messages.empty())
      << "server " << id_ << ": " << TypeName(m.header.type) << " of "
      << RoleName(m.header.sender_role) << " " << m.header.sender_id << " held: " << what;
  into->bytes += bytes;
  into->messages.push_back(std::move(m));
}

std::vector<Message> ParamServer::Held::Take() {
  std::vector<Message> taken;
  taken.swap(messages);
  bytes = 0;
  return taken;
}

const float* ParamServer::Values(const Message& m) {
  if (m.header.wire == WireType::kF32) return m.floats(0);
  // bf16 on the wire: widened once per message into a buffer of the server's own.
  const size_t n = m.payloads[0].size() / sizeof(uint16_t);
  if (decoded_for_ != &m) {
    decoded_.resize(n);
    FromBf16(static_cast<const uint16_t*>(m.payloads[0].data()), n, decoded_.data());
    decoded_for_ = &m;
  }
  return decoded_.data();
}

void ParamServer::CheckFinite(const Message& m, const char* what) {
  const size_t n = static_cast<size_t>(SpanKeys(m.header.ranges));
  const float* values = Values(m);
  const size_t at = FirstNonFinite(values, n);
  if (at == n) return;
  ++non_finite_;
  int64_t key = 0;  // the key of value `at`, across the message's spans
  size_t before = 0;
  for (const auto& r : m.header.ranges) {
    if (at < before + static_cast<size_t>(r.size())) {
      key = r.begin + static_cast<int64_t>(at - before);
      break;
    }
    before += static_cast<size_t>(r.size());
  }
  throw std::invalid_argument(std::string(what) + " value " + std::to_string(values[at]) +
                              " at key " + std::to_string(key));
}

void ParamServer::AfterPush(int64_t before) {
  if (shard_->awaiting_norm()) {
    if (!send_norm_) throw std::logic_error("clipping in sync mode needs a norm exchange");
    send_norm_(shard_->version(), shard_->partial_squared_norm());
  }
  if (shard_->version() != before) {
    if (on_version_) on_version_(shard_->version());
    for (Message& m : ahead_.Take()) Handle(m);
  }
}

void ParamServer::PollNorm() {
  if (!shard_->awaiting_norm()) return;
  const int64_t before = shard_->version();
  if (auto norm = take_norm_(before)) {
    shard_->CompleteStep(*norm);
    if (on_version_) on_version_(shard_->version());
    for (Message& m : after_norm_.Take()) Handle(m);
    for (Message& m : ahead_.Take()) Handle(m);
  }
}

void ParamServer::ReplyPull(const PendingPull& p) {
  Header h;
  h.type = MsgType::kPullReply;
  h.sender_role = Role::kServer;
  h.sender_id = id_;
  h.request_id = p.header.request_id;
  h.step = p.header.exact ? p.header.step : shard_->version();
  h.fingerprint = map_.fingerprint;
  h.held_s = std::chrono::duration<double>(Clock::now() - p.arrived).count();
  h.stop = shard_->Stopping(h.step);
  h.ranges = p.header.ranges;  // what the pull asked for, as it asked for it
  h.wire = p.header.wire;
  // Shared: a later step copies instead of overwriting.
  auto values = p.header.exact ? shard_->ValuesAt(p.header.step) : shard_->values();
  if (!values) {
    return ReplyError(p.peer, p.header,
                      "version " + std::to_string(p.header.step) + " is no longer held (at " +
                          std::to_string(shard_->version()) + ")");
  }
  bool sent = false;
  if (h.wire == WireType::kBf16) {
    auto packed = std::make_shared<std::vector<uint16_t>>(SpanKeys(h.ranges));
    GatherBf16(values->data(), shard_->range().begin, h.ranges, packed->data());
    sent = SendMessage(socket_, h, {{packed, packed->data(), packed->size(), sizeof(uint16_t)}},
                       p.peer);
  } else if (h.ranges.size() == 1 && h.ranges[0] == shard_->range()) {
    sent = SendMessage(socket_, h, {{values, values->data(), values->size()}}, p.peer);
  } else {
    auto rows = std::make_shared<std::vector<float>>(SpanKeys(h.ranges));
    GatherSpans(values->data(), shard_->range().begin, h.ranges, rows->data());
    sent = SendMessage(socket_, h, {{rows, rows->data(), rows->size()}}, p.peer);
  }
  if (!sent) NoteDropped(p.header);
}

bool ParamServer::BlockersComputing(const PendingPull& p, Clock::time_point now) const {
  if (!busy_seen_) return false;
  Clock::time_point seen{};
  for (int w : shard_->Blockers(p.header.sender_id, p.header.step)) {
    seen = std::max(seen, busy_seen_(w));
  }
  const auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  return now <= BusyDeadline(p.arrived, timeout, seen);
}

void ParamServer::ServePending() {
  const auto now = Clock::now();
  // A backup answers once it leads: a worker that asks it learned of its primary's loss first.
  const bool follows = following();
  for (size_t i = 0; i < pending_.size();) {
    const PendingPull& p = pending_[i];
    if (!follows && shard_->PullReady(p.header.sender_id, p.header.step)) {
      ReplyPull(p);
    } else if (std::chrono::duration<double>(now - p.arrived).count() > timeout_s_ &&
               !BlockersComputing(p, now)) {
      std::string who;
      for (int w : shard_->Blockers(p.header.sender_id, p.header.step)) {
        who += (who.empty() ? "" : ", ") + WorkerName(w);
      }
      if (!shard_->initialized()) who = "the initial values from worker 0";
      ReplyError(p.peer, p.header,
                 "pull for " + std::to_string(p.header.step) + " waited " + JsonNumber(timeout_s_) +
                     " s (--timeout_s) for " + (who.empty() ? "pushes" : who));
    } else {
      ++i;
      continue;
    }
    pending_.erase(pending_.begin() + i);
  }
}

ServerStats ParamServer::Stats() const {
  ServerStats st;
  st.server = id_;
  st.pushes = pushes_;
  st.pulls = pulls_;
  st.errors = errors_;
  st.non_finite = non_finite_;
  st.version = shard_->version();
  st.peak_rss_mb = PeakRssMb();
  const MemoryPeaks mem = PeakMemory();
  st.peak_private_mb = mem.private_mb;
  st.peak_shared_mb = mem.shared_mb;
  st.staleness = staleness_;
  st.state_hash = shard_->StateHash();
  const Shard::GainStats& g = shard_->gain_stats();
  if (g.steps > 0) {
    st.gain_steps = g.steps;
    st.gain_mean = g.sum / static_cast<double>(g.steps);
    st.gain_min = g.min;
    st.gain_max = g.max;
    st.gain_last = shard_->lr_gain();
  }
  return st;
}

}  // namespace tteps::server
