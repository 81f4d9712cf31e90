#include "common/kv_client.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "common/bf16.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/transport.h"

namespace tteps {

constexpr double kReplyMarginS = 2.0;

// answers[k][s]: the reply of server s to request k (got[k][s]: there is one; a pull is answered
// by one server per range); seconds[k]: when the last server answered request k, from the start
// of the exchange.
struct KVClient::Replies {
  std::vector<std::vector<Message>> answers;
  std::vector<std::vector<bool>> got;
  std::vector<double> seconds;
};

// The requests of one exchange, and what has come back so far.
struct KVClient::Inflight {
  std::vector<Request> requests;
  const char* what = "";
  uint64_t first_id = 0;
  Clock::time_point start, deadline;
  Replies replies;
  std::vector<std::vector<bool>> done;  // [request][server]
  std::vector<size_t> missing_of;       // servers yet to answer, per request
  size_t answered = 0;                  // requests [0, answered) are answered by every server
  // Ordered replicas: per server, the first request (a push) not sent to it yet, with every
  // later one, until the range's other replicas hold it (SIZE_MAX: none held back).
  std::vector<size_t> held_from;
  // What the request asked: its ticket, where its pull goes, which request is the pull's first
  // stage (after the push, if any), how many stages it has (0: no pull) and how many are read.
  uint64_t ticket = 0;
  float* out = nullptr;
  size_t first_pull = 0, stages = 0, read = 0;
  size_t interruptible_from = SIZE_MAX;
  PullResult first;  // stage 0's
};

KVClient::KVClient(zmq::context_t& ctx, const ClusterMap& map, const NodeInfo& self,
                   KVClientOptions options)
    : map_(map), self_(self), o_(std::move(options)), routes_(map) {
  for (const auto& server : map_.servers) {
    sockets_.push_back(MakeSocket(ctx, zmq::socket_type::dealer));
    sockets_.back().connect(server.endpoint);
  }
}

bool KVClient::WaitsForBackups(const Request& q, size_t s) const {
  return q.type == MsgType::kPush && !q.more && routes_.PushWaitsForBackups(s);
}

void KVClient::SendHeld() {
  if (!inflight_) return;
  Inflight& f = *inflight_;
  bool holding = false;
  for (size_t s = 0; s < f.held_from.size(); ++s) {
    const size_t first = f.held_from[s];
    if (first == SIZE_MAX) continue;
    bool held_by_all = !routes_.dead(s);  // a lost primary's requests are LoseServer's
    for (int r : routes_.ReplicasOf(s)) {
      if (static_cast<size_t>(r) != s && !routes_.dead(r) && !f.replies.got[first][r]) {
        held_by_all = false;
      }
    }
    if (!held_by_all && !routes_.dead(s)) {
      holding = true;
      continue;
    }
    f.held_from[s] = SIZE_MAX;
    if (routes_.dead(s)) continue;
    for (size_t i = first; i < f.requests.size(); ++i) {
      if (!f.done[i][s]) SendTo(f.requests[i], f.first_id + i, s);
    }
  }
  if (!holding) ReleasePayloads(&f.requests);
}

void KVClient::ReleasePayloads(std::vector<Request>* requests) {
  // ZeroMQ holds what it still sends; kept here, a gradient buffer would look in use.
  for (Request& q : *requests) {
    q.owner.clear();
    q.data.clear();
  }
}

void KVClient::CheckLosses() {
  if (!o_.lost_servers || o_.lost_servers->count() == lost_seen_) return;
  const std::vector<int> fresh = o_.lost_servers->Since(lost_seen_);
  lost_seen_ += fresh.size();
  for (int s : fresh) {
    if (s >= 0 && static_cast<size_t>(s) < routes_.servers()) LoseServer(static_cast<size_t>(s));
  }
}

void KVClient::LoseServer(size_t s) {
  bool fresh = false;
  const size_t reader = routes_.Lose(s, &fresh);
  if (!fresh) return;
  if (reader == SIZE_MAX) {
    throw std::runtime_error(map_.servers[s].Name() + " was lost and no other server holds " +
                             map_.ranges[s].ToString());
  }
  for (auto it = parts_.begin(); it != parts_.end();) {
    it = it->second == s ? parts_.erase(it) : std::next(it);  // its replicas got the parts too
  }
  if (!inflight_) return;
  Inflight& f = *inflight_;
  f.held_from[s] = SIZE_MAX;  // whether sent or not, its requests go to the replica now
  for (size_t i = 0; i < f.requests.size(); ++i) {
    if (f.done[i][s]) continue;
    f.done[i][s] = true;
    if (f.requests[i].type == MsgType::kPull) {
      // Behind this client's pushes on the same connection, so the replica's answer sees them.
      SendTo(f.requests[i], f.first_id + i, reader);
      f.done[i][reader] = false;
    } else if (--f.missing_of[i] == 0) {  // a push or init: the replicas hold it too
      f.replies.seconds[i] = SecondsSince(f.start);
    }
  }
  // The re-asked replica gets a full deadline of its own.
  f.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(o_.timeout_s + kReplyMarginS));
  SendHeld();  // a primary waiting for this backup waits no more
}

void KVClient::SendTo(const Request& q, uint64_t id, size_t s) {
  Header h;
  h.type = q.type;
  h.sender_role = self_.role;
  h.sender_id = self_.id;
  h.request_id = id;
  h.fingerprint = map_.fingerprint;
  h.ranges = q.ranges[s];
  h.step = q.step;
  h.samples = q.samples;
  h.norm = q.norm;
  h.noise_sq = q.noise_sq;
  h.noise_n2 = q.noise_n2;
  h.stop = q.stop;
  h.wire = q.wire;
  h.more = q.more;
  h.slice = q.slice;
  h.exact = q.exact;
  h.epoch = map_.epoch;
  if (q.type == MsgType::kPull) {
    SendMessage(sockets_[s], h);
  } else {
    const auto count = static_cast<size_t>(SpanKeys(h.ranges));
    const size_t each = WireBytes(q.wire);
    if (q.type == MsgType::kPush) bytes_pushed_ += static_cast<int64_t>(count * each);
    SendMessage(sockets_[s], h, {{q.owner[s], q.data[s], count, each}});
  }
}

void KVClient::PushPart(std::shared_ptr<const std::vector<float>> grad_sum,
                        const std::vector<KeyRange>& spans, int64_t version) {
  Request q = DataRequest(MsgType::kPush, std::move(grad_sum), spans, o_.wire);
  q.step = version;
  q.more = true;
  CheckLosses();
  for (size_t s = 0; s < sockets_.size(); ++s) {
    if (q.ranges[s].empty() || routes_.dead(s)) continue;  // none of this server's keys, or lost
    const uint64_t id = next_request_++;
    parts_[id] = s;
    SendTo(q, id, s);
  }
}

KVClient::~KVClient() = default;

void KVClient::Begin(std::vector<Request> requests, const char* what) {
  if (inflight_) {  // the request still in flight, with the stages of its pull not read yet
    Wait({inflight_->ticket}, inflight_->stages > 0 ? inflight_->stages - 1 : 0);
  }
  CheckLosses();
  const size_t n = sockets_.size(), k = requests.size();
  auto f = std::make_unique<Inflight>();
  f->what = what;
  f->first_id = next_request_;
  next_request_ += k;
  f->start = Clock::now();
  // A server holds a pull for up to timeout_s from its arrival, then answers with an error
  // naming the workers it waits for; the margin lets that answer arrive before we give up.
  f->deadline = f->start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(o_.timeout_s + kReplyMarginS));
  f->done.assign(k, std::vector<bool>(n, true));
  f->missing_of.assign(k, 0);
  f->held_from.assign(n, SIZE_MAX);
  bool holding = false;
  for (size_t s = 0; s < n; ++s) {
    for (size_t i = 0; i < k; ++i) {
      if (!routes_.Sends(requests[i].type, s)) continue;
      // Ordered replicas: a range's primary applies a push as it comes and names it to its
      // backups, so it gets the push (and the pulls behind it) once they hold it. A worker lost
      // between the two sends then leaves a push that only a backup holds (and never applies).
      if (f->held_from[s] == SIZE_MAX && WaitsForBackups(requests[i], s)) f->held_from[s] = i;
      if (f->held_from[s] > i) SendTo(requests[i], f->first_id + i, s);
      holding = holding || f->held_from[s] <= i;
      f->done[i][s] = false;
      ++f->missing_of[i];
    }
  }
  if (!holding) ReleasePayloads(&requests);
  f->replies.answers.resize(k);
  for (auto& a : f->replies.answers) a.resize(n);  // Message is move-only
  f->replies.got.assign(k, std::vector<bool>(n, false));
  f->replies.seconds.assign(k, 0);
  f->requests = std::move(requests);
  inflight_ = std::move(f);
}

bool KVClient::Await(size_t upto, size_t interruptible_from) {
  Inflight& f = *inflight_;
  const size_t n = sockets_.size(), k = f.requests.size();
  const std::string what = f.what;
  std::vector<zmq::pollitem_t> items(n);
  for (size_t s = 0; s < n; ++s) items[s] = {sockets_[s].handle(), 0, ZMQ_POLLIN, 0};
  const auto advance = [&] {
    while (f.answered < k && f.missing_of[f.answered] == 0) ++f.answered;
  };
  advance();
  while (f.answered < upto || !parts_.empty()) {
    if (o_.abort && o_.abort()) throw std::runtime_error(what + " aborted (shutdown or rollback)");
    CheckLosses();
    advance();
    if (f.answered >= upto && parts_.empty()) break;
    if (f.answered >= interruptible_from && o_.interrupt && o_.interrupt()) {
      inflight_.reset();  // its late replies are ignored (ids below the next exchange's)
      return false;
    }
    Poll(items.data(), n, 50);
    for (size_t s = 0; s < n; ++s) {
      if (items[s].revents & ZMQ_POLLIN) Receive(s);
    }
    SendHeld();
    advance();
    // Checked after reading what has come: answers already here never time out.
    if ((f.answered < upto || !parts_.empty()) && Clock::now() > Deadline(f)) TimedOut(upto);
  }
  return true;
}

void KVClient::Receive(size_t s) {
  Inflight& f = *inflight_;
  const size_t k = f.requests.size();
  Message m;
  try {
    while (ReceiveMessage(sockets_[s], false, 0, &m)) {
      if (routes_.dead(s)) continue;  // declared lost: whatever it still says is not counted
      const uint64_t id = m.header.request_id;
      if (parts_.erase(id) > 0) {  // the acknowledgement of a part sent during backward
        if (m.header.type == MsgType::kError) {
          throw std::runtime_error(map_.servers[s].Name() + " refused a push part of " +
                                   self_.Name() + ": " + m.header.text);
        }
        continue;
      }
      if (id < f.first_id || id >= f.first_id + k) continue;  // late reply, abandoned
      const size_t i = id - f.first_id;
      if (m.header.type == MsgType::kError) {
        throw std::runtime_error(map_.servers[s].Name() + " refused the " + f.what + " of " +
                                 self_.Name() + ": " + m.header.text);
      }
      if (f.done[i][s]) continue;  // a lost server's, or a second copy
      f.done[i][s] = true;
      f.replies.got[i][s] = true;
      f.replies.answers[i][s] = std::move(m);
      if (--f.missing_of[i] == 0) f.replies.seconds[i] = SecondsSince(f.start);
    }
  } catch (const CodecError& e) {
    throw std::runtime_error(std::string(f.what) + ": malformed reply from " +
                             map_.servers[s].Name() + ": " + e.what());
  }
}

Clock::time_point KVClient::Deadline(const Inflight& f) const {
  if (!o_.busy_seen) return f.deadline;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(o_.timeout_s + kReplyMarginS));
  return std::max(f.deadline, BusyDeadline(f.start, timeout, o_.busy_seen(-1)));
}

void KVClient::TimedOut(size_t upto) const {
  const Inflight& f = *inflight_;
  std::string missing;
  for (size_t s = 0; s < sockets_.size(); ++s) {
    bool all = true;
    for (size_t i = 0; i < upto; ++i) all = all && f.done[i][s];
    if (!all) missing += (missing.empty() ? "" : ", ") + map_.servers[s].Name();
  }
  throw std::runtime_error(std::string(f.what) + " by " + self_.Name() + ": no answer within " +
                           std::to_string(o_.timeout_s + kReplyMarginS) +
                           " s (--timeout_s + 2, no other worker computing) from " + missing);
}

PullResult KVClient::ReadPull(const Replies& replies, size_t index, const Request& request,
                              float* out) {
  PullResult r;
  r.version = INT64_MAX;
  const auto& answers = replies.answers[index];
  for (size_t s = 0; s < answers.size(); ++s) {
    if (!replies.got[index][s]) continue;  // a replica not asked (or lost before answering)
    const Message& m = answers[s];
    const std::vector<KeyRange>& asked = request.ranges[s];
    if (m.header.type != MsgType::kPullReply || m.payloads.size() != 1 ||
        m.header.wire != request.wire || m.header.ranges.size() != asked.size() ||
        !std::equal(asked.begin(), asked.end(), m.header.ranges.begin())) {
      throw std::runtime_error(
          "pull reply from " + map_.servers[s].Name() + " does not hold the keys asked for (" +
          std::to_string(SpanKeys(asked)) + " keys of " + map_.ranges[s].ToString() + ")");
    }
    if (request.wire == WireType::kBf16) {
      ScatterBf16(static_cast<const uint16_t*>(m.payloads[0].data()), asked, 0, out);
    } else {
      ScatterSpans(m.floats(0), asked, 0, out);
    }
    bytes_pulled_ += static_cast<int64_t>(m.payloads[0].size());
    r.version = std::min(r.version, m.header.step);
    r.held_s = std::max(r.held_s, m.header.held_s);
    r.stop = r.stop || m.header.stop;
  }
  if (r.version == INT64_MAX) throw std::runtime_error("a pull that no server answered");
  return r;
}

KVClient::Request KVClient::DataRequest(MsgType type,
                                        std::shared_ptr<const std::vector<float>> values,
                                        const std::vector<KeyRange>& spans, WireType wire) const {
  if (static_cast<int64_t>(values->size()) != map_.param_count) {
    throw std::invalid_argument(std::string(TypeName(type)) + " of " +
                                std::to_string(values->size()) + " floats, expected " +
                                std::to_string(map_.param_count));
  }
  const std::string bad = CheckSpans(spans, KeyRange{0, map_.param_count});
  if (!bad.empty()) throw std::invalid_argument(std::string(TypeName(type)) + ": " + bad);
  Request q;
  q.type = type;
  q.wire = wire;
  q.ranges = routes_.PerServer(spans);
  for (const auto& ranges : q.ranges) {
    if (wire == WireType::kBf16) {
      auto packed = std::make_shared<std::vector<uint16_t>>(SpanKeys(ranges));
      GatherBf16(values->data(), 0, ranges, packed->data());
      q.data.push_back(packed->data());
      q.owner.push_back(std::move(packed));
    } else if (spans.empty()) {  // dense: each server's range straight out of the caller's vector
      q.owner.push_back(values);
      q.data.push_back(values->data() + ranges[0].begin);
    } else {
      auto rows = std::make_shared<std::vector<float>>(SpanKeys(ranges));
      GatherSpans(values->data(), 0, ranges, rows->data());
      q.data.push_back(rows->data());
      q.owner.push_back(std::move(rows));
    }
  }
  return q;
}

KVClient::Request KVClient::PushRequest(std::shared_ptr<const std::vector<float>> grad,
                                        const std::vector<KeyRange>& spans,
                                        const PushMeta& meta) const {
  Request q = DataRequest(MsgType::kPush, std::move(grad), spans, o_.wire);
  q.slice = meta.slice;
  q.step = meta.version;
  q.samples = meta.samples;
  q.norm = meta.mean_grad_norm;
  q.noise_sq = meta.noise_sq;
  q.noise_n2 = meta.noise_n2;
  q.stop = meta.stop;
  return q;
}

KVClient::Request KVClient::PullRequest(int64_t want, const std::vector<KeyRange>& spans) const {
  const std::string bad = CheckSpans(spans, KeyRange{0, map_.param_count});
  if (!bad.empty()) throw std::invalid_argument("pull: " + bad);
  Request q;
  q.type = MsgType::kPull;
  q.wire = o_.wire;
  q.step = want;
  q.ranges = routes_.PerServer(spans);
  return q;
}

KVRequest KVRequest::Init(const float* values, int64_t count) {
  KVRequest r;
  // Init happens once: a copy keeps the zero-copy send independent of the caller's buffer.
  r.values = std::make_shared<std::vector<float>>(values, values + count);
  r.init = true;
  return r;
}

KVRequest KVRequest::Push(std::shared_ptr<const std::vector<float>> grad,
                          std::vector<KeyRange> spans, const PushMeta& meta) {
  KVRequest r;
  r.values = std::move(grad);
  r.push_spans = std::move(spans);
  r.meta = meta;
  return r;
}

KVRequest KVRequest::Pull(int64_t want, float* out, std::vector<KeyRange> spans) {
  KVRequest r;
  r.want = want;
  r.out = out;
  r.stages = {std::move(spans)};
  return r;
}

KVRequest& KVRequest::ThenPull(int64_t want_version, float* into,
                               std::vector<std::vector<KeyRange>> pull_stages) {
  want = want_version;
  out = into;
  stages = std::move(pull_stages);
  return *this;
}

KVTicket KVClient::Send(KVRequest r) {
  if (!r.values && !r.out) throw std::invalid_argument("a request with nothing to send");
  if (r.init && r.out) throw std::invalid_argument("init goes alone");
  if (!r.out && !r.stages.empty()) throw std::invalid_argument("a pull with nowhere to go");
  if (r.out && r.stages.empty()) r.stages = {{}};
  std::vector<Request> qs;
  if (r.init) {
    qs.push_back(DataRequest(MsgType::kInit, r.values, {}, WireType::kF32));
  } else if (r.values) {
    qs.push_back(PushRequest(r.values, r.push_spans, r.meta));
  }
  const size_t first_pull = qs.size();
  if (r.out) {
    for (const auto& keys : r.stages) {
      // An empty span list would mean every key. A server holding none of a stage's keys still
      // gets its (empty) request: its answer says the version is there, like the others'.
      if (keys.empty() && r.stages.size() > 1) {
        throw std::invalid_argument("staged pull with an empty stage");
      }
      qs.push_back(PullRequest(r.want, keys));
      qs.back().exact = r.exact;
    }
  }
  Begin(std::move(qs), r.init ? "init" : !r.out ? "push" : r.values ? "push and pull" : "pull");
  Inflight& f = *inflight_;
  f.ticket = next_ticket_++;
  f.out = r.out;
  f.first_pull = first_pull;
  f.stages = r.out ? r.stages.size() : 0;
  f.interruptible_from = r.interruptible ? first_pull : SIZE_MAX;
  return {f.ticket};
}

PullResult KVClient::Wait(const KVTicket& ticket, size_t stage) {
  const bool in_flight = inflight_ && inflight_->ticket == ticket.number;
  if (!in_flight && ticket.number == completed_) return completed_result_;
  if (!in_flight) {
    throw std::logic_error("KVClient::Wait on request " + std::to_string(ticket.number) +
                           ", neither in flight nor the last one completed (" +
                           std::to_string(completed_) + ")");
  }
  if (inflight_->stages > 0 && stage >= inflight_->stages) {  // the caller's mistake: kept
    throw std::logic_error("KVClient::Wait for stage " + std::to_string(stage) + " of a pull of " +
                           std::to_string(inflight_->stages));
  }
  try {
    return WaitInFlight(stage);
  } catch (...) {
    inflight_.reset();  // a request that failed is over: its late replies are ignored
    throw;
  }
}

PullResult KVClient::WaitInFlight(size_t stage) {
  Inflight& f = *inflight_;
  if (f.stages == 0) {  // an init or a push alone
    Await(f.requests.size());
    PullResult r;
    r.push_s = f.replies.seconds[0];
    Complete(r);
    return r;
  }
  if (f.read == 0) {
    if (!Await(f.first_pull + 1, f.interruptible_from)) {  // the push and stage 0
      PullResult changed;
      changed.view_changed = true;
      return changed;
    }
    f.first = ReadPull(f.replies, f.first_pull, f.requests[f.first_pull], f.out);
    if (f.first_pull > 0) f.first.push_s = f.replies.seconds[0];
    f.read = 1;
    // The later stages are of the same version and follow at once: they get a deadline of their
    // own from here, not what stage 0's wait for the other workers left of the exchange's.
    f.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(o_.timeout_s + kReplyMarginS));
  }
  if (stage >= f.read) {
    Await(f.first_pull + stage + 1);
    for (; f.read <= stage; ++f.read) {
      const size_t i = f.first_pull + f.read;
      const PullResult r = ReadPull(f.replies, i, f.requests[i], f.out);
      // Sync: the servers answer a worker's pulls for one version together (the next version
      // needs this worker's next push).
      if (r.version != f.first.version) {
        throw std::runtime_error("staged pull: stage " + std::to_string(f.read) +
                                 " came at version " + std::to_string(r.version) + ", stage 0 at " +
                                 std::to_string(f.first.version));
      }
    }
  }
  const PullResult r = f.first;
  if (f.read == f.stages) Complete(r);
  return r;
}

PullResult KVClient::Call(KVRequest request) {
  const size_t last = request.out && request.stages.size() > 1 ? request.stages.size() - 1 : 0;
  return Wait(Send(std::move(request)), last);
}

void KVClient::Complete(const PullResult& result) {
  completed_ = inflight_->ticket;
  completed_result_ = result;
  inflight_.reset();
}

}  // namespace tteps
