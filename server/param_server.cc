#include "server/param_server.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/clock.h"
#include "common/peak_memory.h"
#include "server/request_checks.h"

namespace tteps::server {
namespace {

// Until the event a held message waits for, each worker has at most one request in flight per
// server, or one push's parts (it waits for their acknowledgement).
HeldRequests HeldBound(const ClusterMap& map) {
  const size_t nodes = map.workers.size() + 2;
  return HeldRequests(64 * nodes,
                      static_cast<size_t>(map.param_count) * sizeof(float) * nodes + 65536);
}

}  // namespace

ParamServer::ParamServer(zmq::socket_t& socket, const ClusterMap& map, int id, Shard* shard,
                         double timeout_s)
    : socket_(socket),
      replies_(socket, id),
      map_(map),
      id_(id),
      shard_(shard),
      pulls_(timeout_s),
      later_epoch_(HeldBound(map)),
      after_norm_(HeldBound(map)),
      ahead_(HeldBound(map)),
      before_join_(HeldBound(map)),
      max_push_trips_(map.config.MaxPushTrips()),
      order_(map, id) {}

std::string ParamServer::WorkerName(int w) const {
  return w >= 0 && w < workers() ? map_.workers[w].Name() : "worker " + std::to_string(w);
}

std::optional<ServerRemap> ParamServer::Run(const std::function<bool()>& stop,
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
      replies_.Error(peer, unknown, std::string("malformed message: ") + e.what());
    }
    PollNorm();
    ServePending();
  };
  std::optional<ServerRemap> rollback;
  while (!stop()) {
    for (ServerCommand& c : commands ? commands->Take() : std::vector<ServerCommand>{}) {
      if (c.kind == ServerCommand::kRollback) {
        rollback = std::move(c.remap);
      } else {
        Apply(c);
      }
    }
    if (rollback) break;
    serve_once();
  }
  // The primary named each push as it acknowledged it, so its last entries are on their way.
  const auto until = Clock::now() + std::chrono::seconds(2);
  const auto held = [&] { return following() ? order_.queue()->held() : 0; };
  while (held() > 0 && Clock::now() < until) serve_once();
  LOG_IF(WARNING, held() > 0) << "server " << id_ << ": " << held()
                              << " pushes held for the primary's order were never named by it; "
                                 "not applied";
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
    if (w < workers()) shard_->DropWorker(w);
  }
  // After a rollback the joiners push again from the checkpoint's clocks of their places.
  for (const auto& [slot, joiner] : carried.joiners) Rejoin(slot, joiner, shard_->clock(slot));
}

void ParamServer::SetOrderLink(std::function<bool(int, const Header&)> send) {
  if (!order_.Link(std::move(send), shard_->consistency() == Consistency::kSync)) return;
  LOG(INFO) << "server " << id_ << ": replicas apply pushes in the order of their primary, now "
            << "server " << order_.Primary();
}

void ParamServer::HandleOrder(const Message& m) {
  std::string why;
  switch (order_.Receive(m, &why)) {
    case ReplicaOrder::Received::kRefused:
      return replies_.Error("", m.header, why);
    case ReplicaOrder::Received::kIgnored:
      return;
    case ReplicaOrder::Received::kBroken:
      for (auto& [sender, held] : order_.queue()->TakeAll()) {
        ApplyHeld(held, held.header.slice >= 0 ? held.header.slice : sender, "a held push");
      }
      return;
    case ReplicaOrder::Received::kAdded:
      return ApplyOrdered();
  }
}

void ParamServer::ApplyOrdered() {
  PushOrder& order = *order_.queue();
  while (const PushOrder::Entry* e = order.Front()) {
    const int sender = e->sender, slot = e->slot;
    const int64_t count = e->count;
    if (count == PushOrder::kDropped) {  // the primary dropped the slot here
      order.PopFront();
      if (!shard_->dropped(slot)) shard_->DropWorker(slot);
      const auto j = places_.joined.find(slot);
      if (j != places_.joined.end() && j->second == sender) places_.joined.erase(j);
      continue;
    }
    if (count < 0) {  // ... or gave it to a worker that joined (the entry's sender)
      order.PopFront();
      shard_->Rejoin(slot, PushOrder::RejoinClock(count));
      places_.pending_rejoins.erase(slot);
      places_.joined[slot] = sender;
      places_.rejoined.insert(sender);
      continue;
    }
    if (shard_->clock(slot) >= count) {  // applied already, named by a primary lost since
      order.PopFront();
      continue;
    }
    if (!order.HasPush(sender)) {
      if (!places_.lost.count(sender)) return;  // on its way
      // Lost between its sends to the primary and to this server: it will never come.
      LOG(ERROR) << "server " << id_ << ": the primary applied a push of lost worker " << sender
                 << " that never reached this server; the replicas differ from here on";
      order.PopFront();
      continue;
    }
    Message m = order.PopPush(sender);
    order.PopFront();
    LOG_IF(ERROR, shard_->clock(slot) + 1 != count)
        << "server " << id_ << ": the primary's push of worker " << sender << " made slot " << slot
        << "'s count " << count << ", here " << shard_->clock(slot) + 1;
    ApplyHeld(m, slot, "the primary applied a push that this server refuses");
  }
}

void ParamServer::ApplyHeld(Message& m, int slot, const char* what) {
  values_.Forget();  // another message may have lived at m's address
  try {
    AfterPush(ApplyPush(m, slot));
  } catch (const std::exception& e) {
    LOG(ERROR) << "server " << id_ << ": " << what << " (worker " << m.header.sender_id
               << "): " << e.what();
  }
}

void ParamServer::DropWorker(int w) {
  places_.lost.insert(w);
  const int slot = places_.SlotOf(w, workers());
  if (slot < 0) return;  // a joiner of a sync job: its slice comes from another worker
  const auto j = places_.joined.find(slot);
  if (j != places_.joined.end() && j->second != w) return;  // the slot's joiner lives on
  // A backup drops the slot (and forgets its joiner) where the primary's order says.
  if (following()) return ApplyOrdered();
  if (j != places_.joined.end()) places_.joined.erase(j);
  shard_->DropWorker(slot);
  if (order_.ordered()) order_.Name(w, slot, PushOrder::kDropped);
}

void ParamServer::Rejoin(int slot, int joiner, int64_t clock) {
  if (shard_->consistency() == Consistency::kSync || slot < 0 || slot >= workers() || clock < 0) {
    LOG(ERROR) << "server " << id_ << ": worker " << joiner << " cannot take worker " << slot
               << "'s place (async and SSP only)";
    return;
  }
  places_.joined[slot] = joiner;
  LOG(WARNING) << "server " << id_ << ": worker " << joiner << " takes worker " << slot
               << "'s place from its push " << clock + 1 << " on";
  if (following()) {
    // Where the primary's order says, unless its entry came first.
    if (!places_.rejoined.count(joiner)) places_.pending_rejoins[slot] = clock;
    ApplyOrdered();
  } else {
    shard_->Rejoin(slot, clock);
    places_.rejoined.insert(joiner);
    if (order_.ordered()) order_.Name(joiner, slot, PushOrder::Rejoined(clock));
  }
  for (Message& m : before_join_.Take()) Handle(m);
}

void ParamServer::LoseServer(int s) {
  if (order_.LoseServer(s)) Promote();
}

void ParamServer::Promote() {
  order_.queue()->Restart();
  auto held = order_.queue()->TakeAll();
  LOG(WARNING) << "server " << id_ << " is its range's primary now; it applies the " << held.size()
               << " pushes its primary never named, in arrival order";
  // The joiners' places first: their pushes count for the slots they took.
  for (const auto& [slot, clock] : places_.pending_rejoins) {
    const auto j = places_.joined.find(slot);
    if (j == places_.joined.end()) continue;
    shard_->Rejoin(slot, clock);
    places_.rejoined.insert(j->second);
    order_.Name(j->second, slot, PushOrder::Rejoined(clock));
  }
  places_.pending_rejoins.clear();
  for (auto& [sender, m] : held) {
    if (places_.lost.count(sender)) continue;  // refused from its loss on
    ApplyHeld(m, m.header.slice >= 0 ? m.header.slice : sender, "a held push");
  }
  // The losses its primary had not ordered yet: the slot of a lost worker, or of a lost joiner.
  for (int w : places_.lost) {
    const int slot = places_.SlotOf(w, workers());
    if (slot < 0 || shard_->dropped(slot)) continue;
    const auto j = places_.joined.find(slot);
    if (j != places_.joined.end() && j->second != w) continue;  // its place is another's now
    if (j != places_.joined.end()) places_.joined.erase(j);
    shard_->DropWorker(slot);
    order_.Name(w, slot, PushOrder::kDropped);
  }
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
  values_.Forget();  // a new message, perhaps at the old one's address
  const Header& h = m.header;
  const bool data =
      h.type == MsgType::kInit || h.type == MsgType::kPush || h.type == MsgType::kPull;
  const bool order = h.type == MsgType::kOrder;
  if (!data && !order) {
    return replies_.Error(m.peer, h, std::string("unexpected ") + TypeName(h.type));
  }
  // A primary's order too: its stream of the new epoch starts before this server has rolled back.
  if (h.epoch > map_.epoch) {
    return Hold(m, &later_epoch_,
                "a request of epoch " + std::to_string(h.epoch) + " while this server serves " +
                    std::to_string(map_.epoch) + " (until it has rolled back too)");
  }
  if (order) return HandleOrder(m);
  if (std::string why = RequestProblem(h, map_, shard_->range()); !why.empty()) {
    return replies_.Error(m.peer, h, why);
  }
  try {
    switch (h.type) {
      case MsgType::kInit:
        CheckFinite(m, "initial values");
        if (!shard_->initialized()) shard_->Init(values_.Of(m));
        replies_.Ack(m.peer, h, MsgType::kInitAck, shard_->version());
        break;
      case MsgType::kPush:
        HandlePush(m);
        break;
      case MsgType::kPull:
        ++counts_.pulls;
        pulls_.Add(m.peer, h);
        break;
      default:
        break;
    }
  } catch (const std::exception& e) {
    replies_.Error(m.peer, h, e.what());  // refused; the server keeps serving
  }
}

void ParamServer::HandlePush(Message& m) {
  if (std::string why = PushProblem(m.header, max_push_trips_); !why.empty()) {
    throw std::invalid_argument(why);
  }
  CheckFinite(m, "gradient");
  int slice = -1;
  switch (AdmitPush(m, &slice)) {
    case Admission::kHeld:
      return;
    case Admission::kCounted:  // the same gradient is counted
      return replies_.Ack(m.peer, m.header, MsgType::kPushAck, shard_->version());
    case Admission::kAdmitted:
      break;
  }
  if (following()) {
    // Held (and acknowledged: this replica has it) until the primary names it.
    const std::string peer = m.peer;
    const Header head = m.header;
    if (!order_.queue()->AddPush(head.sender_id, std::move(m))) {
      throw std::invalid_argument("too many pushes held for the primary's order");
    }
    replies_.Ack(peer, head, MsgType::kPushAck, shard_->version());
    return ApplyOrdered();
  }
  const int64_t before = ApplyPush(m, slice);
  replies_.Ack(m.peer, m.header, MsgType::kPushAck, shard_->version());
  AfterPush(before);
}

void ParamServer::CheckFinite(const Message& m, const char* what) {
  if (std::string why = NonFiniteProblem(m.header, values_.Of(m), what); !why.empty()) {
    ++counts_.non_finite;
    throw std::invalid_argument(why);
  }
}

ParamServer::Admission ParamServer::AdmitPush(Message& m, int* slice) {
  const Header& h = m.header;
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
  const bool original = h.sender_id >= 0 && h.sender_id < workers();
  if ((original && shard_->dropped(h.sender_id)) ||
      (places_.lost.count(h.sender_id) && !following())) {
    throw std::invalid_argument("worker " + std::to_string(h.sender_id) +
                                " was declared lost; its pushes are refused");
  }
  if (*slice == h.sender_id) return Admission::kAdmitted;
  if (shard_->consistency() == Consistency::kSync) {
    return AdoptedSliceIsIn(h, *slice) ? Admission::kCounted : Admission::kAdmitted;
  }
  // Async / SSP: a worker that joined pushes for the lost worker's place it took.
  const auto j = places_.joined.find(*slice);
  if (j != places_.joined.end() && j->second == h.sender_id) return Admission::kAdmitted;
  if (*slice >= 0 && *slice < workers() && h.sender_id >= workers()) {
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
    stale = shard_->Push(slice, h.step, h.samples, h.ranges, values_.Of(m), h.norm, h.more,
                         {h.noise_sq, h.noise_n2});
  }
  if (h.stop) shard_->RequestStop(h.step);
  if (!h.more) {  // a push counts once, however many parts it came in
    ++counts_.staleness[stale];
    ++counts_.pushes;
    if (order_.leading()) order_.Name(h.sender_id, slice, shard_->clock(slice));
  }
  return before;
}

void ParamServer::Hold(Message& m, HeldRequests* into, const std::string& what) {
  const bool first = into->empty();
  const MsgType type = m.header.type;
  const Role role = m.header.sender_role;
  const int32_t sender = m.header.sender_id;
  if (!into->Hold(m)) {
    return replies_.Error(m.peer, m.header, what + ", and too many such held already");
  }
  LOG_IF(INFO, first) << "server " << id_ << ": " << TypeName(type) << " of " << RoleName(role)
                      << " " << sender << " held: " << what;
}

void ParamServer::AfterPush(int64_t before) {
  if (shard_->awaiting_norm()) {
    if (!norm_.send) throw std::logic_error("clipping in sync mode needs a norm exchange");
    norm_.send(shard_->version(), shard_->partial_squared_norm());
  }
  if (shard_->version() != before) {
    if (on_version_) on_version_(shard_->version());
    for (Message& m : ahead_.Take()) Handle(m);
  }
}

void ParamServer::PollNorm() {
  if (!shard_->awaiting_norm()) return;
  const int64_t before = shard_->version();
  if (auto norm = norm_.take(before)) {
    shard_->CompleteStep(*norm);
    if (on_version_) on_version_(shard_->version());
    for (Message& m : after_norm_.Take()) Handle(m);
    for (Message& m : ahead_.Take()) Handle(m);
  }
}

void ParamServer::ServePending() {
  // A backup answers once it leads: a worker that asks it learned of its primary's loss first.
  pulls_.Serve(
      *shard_, following(),
      [&](const PendingPull& p) { AnswerPull(*shard_, id_, map_.fingerprint, p, &replies_); },
      [&](const PendingPull& p, const std::string& why) { replies_.Error(p.peer, p.header, why); },
      [&](int w) { return WorkerName(w); });
}

ServerStats ParamServer::Stats() const {
  ServerStats st;
  st.server = id_;
  st.pushes = counts_.pushes;
  st.pulls = counts_.pulls;
  st.errors = replies_.errors();
  st.non_finite = counts_.non_finite;
  st.version = shard_->version();
  st.peak_rss_mb = PeakRssMb();
  const MemoryPeaks mem = PeakMemory();
  st.peak_private_mb = mem.private_mb;
  st.peak_shared_mb = mem.shared_mb;
  st.staleness = counts_.staleness;
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
