// The worker's (and evaluator's) view of the parameter servers, in the manner of ps-lite's
// KVWorker: every request (an init, a push, a pull, or a push with the pull behind it) has one
// shape, KVRequest; Send gives it to every shard at once and returns a ticket, Wait awaits the
// ticket with a deadline. Knows float arrays and key ranges, not LibTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/busy_peers.h"
#include "common/cluster_map.h"
#include "common/key_routing.h"
#include "common/lost_servers.h"

namespace tteps {

// What a push says besides its values: each push names all of it (the client keeps none of it
// between pushes).
struct PushMeta {
  int64_t version = 0;         // the version its gradients were computed on
  int64_t samples = 0;         // trips behind its gradient sums
  double mean_grad_norm = -1;  // the L2 norm of grad_sum / samples over all keys (clipping)
  // Sync: the slice of the global batch it holds (a lost worker's computed here, or the one a
  // joiner took over); -1: the sender's own.
  int slice = -1;
  double noise_sq = 0, noise_n2 = 0;  // --lr_scaling adascale: the slice's pieces
  // This worker was told to stop (time budget): the servers tell every worker, through their
  // pull replies, at which version training stops.
  bool stop = false;
};

// How a client waits and what it sends, fixed for its life.
struct KVClientOptions {
  double timeout_s = 30;  // every request's deadline (a server's answer, plus a margin)
  // Polled while waiting: true ends the wait with an exception (shutdown, rollback).
  std::function<bool()> abort;
  // Polled while an interruptible request (KVRequest::interruptible) waits for its pull, once
  // its push is acknowledged: true ends the wait, whose result says the view changed. Sync and
  // SSP: the scheduler changed this worker's slices, which the pull may be waiting for.
  std::function<bool()> interrupt;
  // --replicas 2: pushes (and init) go to every server holding a range, pulls to the first live
  // one. A server in `lost_servers` (declared lost by the scheduler) gets nothing more: what it
  // owed an exchange in flight is asked of the next replica (a pull) or already held there (a
  // push, sent to both). It outlives the client; it is checked while waiting.
  const LostServers* lost_servers = nullptr;
  // --wire_dtype bf16: pushes and pull replies carry bfloat16 (init stays float32).
  WireType wire = WireType::kF32;
  // When another worker was last seen computing (called with -1): while one computes, a
  // request's deadline counts from then (common/busy_peers.h). Unset: from the send.
  BusySeen busy_seen;
};

struct PullResult {
  int64_t version = 0;  // lowest version served across shards
  double held_s = 0;    // longest time a server held the pull (waiting for other workers)
  double push_s = 0;    // a push with a pull: until every server acknowledged the push
  bool stop = false;    // a server says training ends with this version (PushMeta::stop)
  // The wait ended early: the interrupt hook said the view changed (KVClientOptions). The pull
  // is abandoned (its late replies are ignored); the push before it was acknowledged.
  bool view_changed = false;
};

// One request to the servers: worker 0's init alone, or a push, a pull, or a push and the pull
// behind it (sent without waiting: a server handles a connection's messages in order, so the
// pull sees the push). Every field it needs is here; the client keeps nothing between requests.
struct KVRequest {
  // Worker 0: the initial values of the whole flat vector (copied: `values` may go).
  static KVRequest Init(const float* values, int64_t count);
  // Gradient sums (`meta` says over what). `spans` (sorted, disjoint keys; empty: every key)
  // say which keys to send: the others' gradient is zero. A dense push is sent without
  // copying, kept alive by the shared pointer until ZeroMQ is done with it.
  static KVRequest Push(std::shared_ptr<const std::vector<float>> grad, std::vector<KeyRange> spans,
                        const PushMeta& meta);
  // The keys of `spans` (empty: every key) into `out`, the whole flat vector, once each
  // server can serve `want` (a version in sync mode, the worker's clock in SSP, ignored in
  // async). The other keys of `out` are left as they were.
  static KVRequest Pull(int64_t want, float* out, std::vector<KeyRange> spans = {});
  // This push's pull, behind it: stage i the keys of `stages[i]` (each non-empty, in the
  // order the caller will need them; the servers send them in that order).
  KVRequest& ThenPull(int64_t want, float* out, std::vector<std::vector<KeyRange>> stages);

  std::shared_ptr<const std::vector<float>> values;  // init or push: what it sends
  bool init = false;
  std::vector<KeyRange> push_spans;
  PushMeta meta;
  float* out = nullptr;  // a pull: where it goes
  int64_t want = 0;
  std::vector<std::vector<KeyRange>> stages;  // a pull's stages ({{}}: one of every key)
  bool exact = false;          // sync: the values of version `want` itself, not of a later one
  bool interruptible = false;  // the wait for the pull may end when the view changes
};

// A request sent; Wait awaits it.
struct KVTicket {
  uint64_t number = 0;
};

class KVClient {
 public:
  KVClient(zmq::context_t& ctx, const ClusterMap& map, const NodeInfo& self,
           KVClientOptions options);
  ~KVClient();

  // Sends `request` to every server holding its keys, after awaiting the request still in flight
  // (and reading what it pulls). Throws std::invalid_argument for keys or sizes that do not fit.
  KVTicket Send(KVRequest request);
  // Until `ticket`'s push (or init) is acknowledged and stage `stage` of its pull (with every
  // stage before) is in its `out`: --timeout_s + 2 from the sending, a later stage's from stage
  // 0's answer. The result (version, stop, time held, push time) is stage 0's. Waiting again on
  // the last ticket completed returns its result; on another ticket: std::logic_error.
  PullResult Wait(const KVTicket& ticket, size_t stage = 0);
  // Send, then Wait for all of it.
  PullResult Call(KVRequest request);
  // Sync: a part of the next push (the keys of `spans`, which the push must not send again),
  // sent at once while backward computes the rest. Nothing to wait on: the next request's
  // Wait awaits its acknowledgement too.
  void PushPart(std::shared_ptr<const std::vector<float>> grad_sum,
                const std::vector<KeyRange>& spans, int64_t version);

  // Payload bytes sent in pushes and received in pull replies so far (headers not counted).
  int64_t bytes_pushed() const { return bytes_pushed_; }
  int64_t bytes_pulled() const { return bytes_pulled_; }

  int64_t total() const { return map_.param_count; }

 private:
  struct Request {
    MsgType type = MsgType::kPull;
    int64_t step = 0, samples = 0;
    double norm = -1;
    double noise_sq = 0, noise_n2 = 0;
    bool stop = false;
    // Per server: the keys named, and (init, push) their values back to back from `data`,
    // kept alive by `owner`.
    std::vector<std::vector<KeyRange>> ranges;
    std::vector<std::shared_ptr<const void>> owner;
    std::vector<const void*> data;
    WireType wire = WireType::kF32;
    bool more = false;
    int slice = -1;
    bool exact = false;
  };
  struct Replies;
  struct Inflight;
  Request DataRequest(MsgType type, std::shared_ptr<const std::vector<float>> values,
                      const std::vector<KeyRange>& spans, WireType wire) const;
  Request PushRequest(std::shared_ptr<const std::vector<float>> grad,
                      const std::vector<KeyRange>& spans, const PushMeta& meta) const;
  Request PullRequest(int64_t want, const std::vector<KeyRange>& spans) const;
  void SendTo(const Request& q, uint64_t id, size_t server);
  // Takes in the servers declared lost since the last look (KVClientOptions::lost_servers).
  void CheckLosses();
  void LoseServer(size_t server);
  // Ordered replicas (async / SSP, --replicas > 1): whether request `q` waits for the other live
  // replicas of `server`, its range's primary, to hold it before it goes to `server`.
  bool WaitsForBackups(const Request& q, size_t server) const;
  // Sends what the primaries held back once their backups hold the push it waited for.
  void SendHeld();
  static void ReleasePayloads(std::vector<Request>* requests);
  // Sends `requests` to every server, in order (after finishing the exchange still in flight).
  void Begin(std::vector<Request> requests, const char* what);
  // Receives until requests [0, upto) are answered by every server and every part is
  // acknowledged, within the deadline; true then. `interruptible_from`: once requests [0, n)
  // are answered, the interrupt hook may end the wait: false, and the exchange is abandoned.
  bool Await(size_t upto, size_t interruptible_from = SIZE_MAX);
  // Takes in what server `s` answered to the exchange in flight (throws on a refusal).
  void Receive(size_t s);
  // The request's deadline, later while another worker computes (KVClientOptions::busy_seen).
  Clock::time_point Deadline(const Inflight& f) const;
  // The exchange's deadline passed: throws, naming the servers that did not answer.
  [[noreturn]] void TimedOut(size_t upto) const;
  // Wait's part for the request in flight.
  PullResult WaitInFlight(size_t stage);
  // The exchange in flight is over: its result is kept for a second Wait on its ticket.
  void Complete(const PullResult& result);
  PullResult ReadPull(const Replies& replies, size_t index, const Request& request, float* out);

  ClusterMap map_;
  NodeInfo self_;
  const KVClientOptions o_;
  std::vector<zmq::socket_t> sockets_;
  KeyRouting routes_;  // which server gets which keys, and which are live
  size_t lost_seen_ = 0;
  uint64_t next_request_ = 1;
  int64_t bytes_pushed_ = 0, bytes_pulled_ = 0;
  std::map<uint64_t, size_t> parts_;    // parts not acknowledged yet: request id -> server
  std::unique_ptr<Inflight> inflight_;  // the requests last sent, until every answer is in
  uint64_t next_ticket_ = 1;
  uint64_t completed_ = 0;  // the last ticket completed, and its result
  PullResult completed_result_;
};

}  // namespace tteps
