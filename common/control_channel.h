// A node's line to the scheduler: registration, then a background thread that sends
// heartbeats and queued messages and receives the scheduler's commands (new
// accumulation, shutdown). Its own DEALER socket, so the training thread never touches it.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/cluster_map.h"
#include "common/message.h"
#include "common/trace.h"
#include "common/transport.h"

namespace tteps {

class ControlChannel {
 public:
  ControlChannel(zmq::context_t& ctx, const std::string& scheduler_endpoint, NodeInfo self,
                 double timeout_s, double heartbeat_s);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Sends the registration and waits (up to the timeout) for the cluster map. Throws
  // std::runtime_error naming the scheduler if it does not answer, or the scheduler's refusal.
  ClusterMap Register();
  // Starts the background thread (heartbeats, commands, queued sends).
  void Start();
  // Thread-safe: queues a message to the scheduler.
  void Send(MsgType type, int64_t step, std::string text, int64_t samples = 0, double norm = -1);
  // Thread-safe: queues a message with float payloads (a parameter snapshot).
  void SendWithPayloads(MsgType type, int64_t step, int64_t samples, std::vector<Payload> payloads);
  // The global gradient norm of `version` once the scheduler has sent it (servers, clipping).
  std::optional<double> TakeNorm(int64_t version);
  // Sends everything queued (waits up to timeout_s); used before a clean exit.
  void Flush();

  // True once the scheduler said to stop, or fell silent for longer than the timeout.
  // `failed` and `reason` say whether the job failed and why.
  bool ShutdownRequested(std::string* reason = nullptr, bool* failed = nullptr) const;
  // Waits (up to the timeout) until the scheduler says every worker is ready to train (kGo).
  // Throws std::runtime_error on a shutdown or when the deadline passes.
  void WaitForGo();
  // True once the scheduler said the time budget is spent (kStop): finish soon, cleanly.
  bool StopRequested() const { return stop_requested_.load(); }
  // The accumulation (micro-batches per step) last set by the scheduler (0: never set).
  int64_t accumulation() const { return accumulation_.load(); }
  const NodeInfo& self() const { return self_; }

 private:
  void Loop();
  // Fills in the sender and queues the message for the background thread.
  void Queue(MsgType type, int64_t step, int64_t samples, Header h, std::vector<Payload> payloads);
  void Stop(const std::string& reason, bool failed);

  zmq::socket_t socket_;
  std::string scheduler_endpoint_;
  NodeInfo self_;
  double timeout_s_, heartbeat_s_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<int64_t> accumulation_{0};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> go_{false};
  std::atomic<size_t> queued_{0};

  mutable std::mutex mu_;
  struct Outgoing {
    Header header;
    std::vector<Payload> payloads;
  };
  std::deque<Outgoing> outbox_;
  std::map<int64_t, double> norms_;
  bool shutdown_ = false, failed_ = false;
  std::string reason_;
};

// When the job records a timeline (`enabled`): a tracer of this node whose events go to the
// scheduler, which writes the job's timeline; null otherwise. Flush it before the node reports
// done.
std::unique_ptr<Tracer> MakeNodeTracer(ControlChannel* control, bool enabled);

}  // namespace tteps
