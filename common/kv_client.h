// The worker's (and evaluator's) view of the parameter servers, in the manner of ps-lite's
// KVWorker: Init / Push / Pull of the flat parameter vector, each request sent to every shard
// at once and awaited with a deadline. Knows float arrays and key ranges, not LibTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/cluster_map.h"
#include "common/key_routing.h"
#include "common/lost_servers.h"

namespace tteps {

// A wait for a pull ended early because the interrupt hook said so (KVClientOptions): the
// request is abandoned (its late replies are ignored); the push before it was acknowledged.
class KVInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
  // Polled while PushPull, PushPullStaged (once the push is acknowledged) and an interruptible
  // Pull wait for their pull: true ends the wait with KVInterrupted. Sync mode: the scheduler
  // gave this worker a lost worker's slice, which the pull may be waiting for.
  std::function<bool()> interrupt;
  // --replicas 2: pushes (and init) go to every server holding a range, pulls to the first live
  // one. A server in `lost_servers` (declared lost by the scheduler) gets nothing more: what it
  // owed an exchange in flight is asked of the next replica (a pull) or already held there (a
  // push, sent to both). It outlives the client; it is checked while waiting.
  const LostServers* lost_servers = nullptr;
  // --wire_dtype bf16: pushes and pull replies carry bfloat16 (init stays float32).
  WireType wire = WireType::kF32;
};

struct PullResult {
  int64_t version = 0;  // lowest version served across shards
  double held_s = 0;    // longest time a server held the pull (waiting for other workers)
  double push_s = 0;    // PushPull: until every server acknowledged the push
  bool stop = false;    // a server says training ends with this version (see RequestStop)
};

class KVClient {
 public:
  KVClient(zmq::context_t& ctx, const ClusterMap& map, const NodeInfo& self,
           KVClientOptions options);
  ~KVClient();

  // Worker 0: the initial values of the whole flat vector.
  void Init(const float* values);
  // Gradient sums (`meta` says over what). `spans` (sorted, disjoint keys; empty: every key)
  // say which keys to send: the others' gradient is zero. A dense push is sent without
  // copying, kept alive by the shared pointer until ZeroMQ is done with it.
  void Push(std::shared_ptr<const std::vector<float>> grad_sum, const std::vector<KeyRange>& spans,
            const PushMeta& meta);
  // sync: a part of the next push, sent at once while backward computes the rest (the keys of
  // `spans`, which must not be sent again). Not awaited here: the next Push or PushPull waits
  // for its acknowledgement too, and completes the push.
  void PushPart(std::shared_ptr<const std::vector<float>> grad_sum,
                const std::vector<KeyRange>& spans, int64_t version);
  // Fills the keys of `spans` (empty: every key) of `out`, the whole flat vector, once each
  // server can serve `want` (a version in sync mode, the worker's clock in SSP, ignored in
  // async). The other keys of `out` are left as they were.
  // `interruptible`: the wait may end with KVInterrupted (KVClientOptions::interrupt).
  // `exact` (sync): the values of version `want` itself, not of a later one.
  PullResult Pull(int64_t want, float* out, const std::vector<KeyRange>& spans = {},
                  bool interruptible = false, bool exact = false);
  // Push, then at once (without waiting for the acknowledgements) the pull of `want`: a
  // server handles a connection's messages in order, so the pull sees the push.
  PullResult PushPull(std::shared_ptr<const std::vector<float>> grad_sum,
                      const std::vector<KeyRange>& push_spans, const PushMeta& meta, int64_t want,
                      float* out, const std::vector<KeyRange>& pull_spans = {});
  // PushPull whose pull comes in stages, stage i the keys of `stages[i]` (each non-empty, in
  // the order the caller will need them): returns once every server acknowledged the push and
  // answered stage 0; the servers send the later stages behind it, and AwaitStage(i) waits
  // for them. Its result (version, stop, time held) is stage 0's. Any other request first
  // awaits the stages not awaited yet.
  PullResult PushPullStaged(std::shared_ptr<const std::vector<float>> grad_sum,
                            const std::vector<KeyRange>& push_spans, const PushMeta& meta,
                            int64_t want, float* out,
                            const std::vector<std::vector<KeyRange>>& stages);
  // Until stage `stage` (and every stage before it) of the last staged pull is in its `out`.
  void AwaitStage(size_t stage);

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
  void Send(const Request& q, uint64_t id, size_t server);
  // Takes in the servers declared lost since the last look (KVClientOptions::lost_servers).
  void CheckLosses();
  void LoseServer(size_t server);
  // Ordered replicas (async / SSP, --replicas > 1): whether request `q` waits for the other live
  // replicas of `server`, its range's primary, to hold it before it goes to `server`.
  bool WaitsForBackups(const Request& q, size_t server) const;
  // Sends what the primaries held back once their backups hold the push it waited for.
  void SendHeld();
  static void ReleasePayloads(std::vector<Request>* requests);
  // Sends `requests` to every server, in order, and waits (deadline) for every answer (and for
  // those of the parts sent before).
  // `interruptible_from`: once requests [0, n) are answered, the interrupt hook may end the wait.
  Replies Exchange(const std::vector<Request>& requests, const char* what,
                   size_t interruptible_from = SIZE_MAX);
  // Exchange in two halves: send (after finishing the exchange still in flight), then receive
  // until requests [0, upto) are answered by every server and every part is acknowledged.
  void Begin(std::vector<Request> requests, const char* what);
  void Await(size_t upto, size_t interruptible_from = SIZE_MAX);
  // Ends the staged pull once every stage is read (and every part acknowledged).
  void FinishStaged();
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
  // The staged pull: where its stages go, and how many are read into it.
  float* staged_out_ = nullptr;
  size_t staged_read_ = 0;
  int64_t staged_version_ = 0;
};

}  // namespace tteps
