// A node's line to the scheduler: registration, then a background thread that sends heartbeats
// and queued reports and receives the scheduler's commands. Role-free: a command or report is
// named by a topic that the roles define (common/topics/worker_topics.h,
// common/topics/server_topics.h), and a role registers a handler per command it understands. Its
// own DEALER socket, so the training thread never touches it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/busy_peers.h"
#include "common/cluster_map.h"
#include "common/message.h"
#include "common/topic.h"
#include "common/trace.h"
#include "common/transport.h"
#include "common/view_update.h"

namespace tteps {

class ControlChannel {
 public:
  using Handler = std::function<void(const Header&)>;

  ControlChannel(zmq::context_t& ctx, const std::string& scheduler_endpoint, NodeInfo self,
                 double timeout_s, double heartbeat_s);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Sends the registration and waits (up to the timeout) for the cluster map. Throws
  // std::runtime_error naming the scheduler if it does not answer, or the scheduler's refusal.
  ClusterMap Register();
  // Before Start(): `handler` runs on the channel's thread for every command of `topic`, with
  // the channel's lock held (so that WaitUntil sees its effect at once): it records the
  // command and must not call the channel. A command whose body is garbled is logged and
  // ignored.
  template <class Body>
  void OnCommand(const Topic<Body>& topic,
                 typename NotDeduced<std::function<void(const Body&)>>::type handler) {
    OnCommandText(topic.name, [topic, handler = std::move(handler)](const Header& h) {
      handler(topic.Decode(h));
    });
  }
  // Before Start(): `handler` runs for every membership view the scheduler sends (whole or as
  // its changes, common/view_update.h), as a command's does, with the whole view. Changes from a
  // view this node does not hold are dropped, and its next heartbeat asks for the whole view.
  void OnView(std::function<void(const View&)> handler);
  // Before Start(): the job's deadline and heartbeat interval replace the node's own (which
  // only bounded the registration). A scheduler not heard from for `silence_s` (which answers
  // every heartbeat; 0: timeout_s) is taken as gone: the node shuts down, naming it.
  void SetTiming(double timeout_s, double heartbeat_s, double silence_s = 0);
  // Starts the background thread (heartbeats, commands, queued sends).
  void Start();

  // Thread-safe: queues a report of `topic` to the scheduler (with payloads: a snapshot's
  // weights).
  template <class Body>
  void Report(const Topic<Body>& topic, const Body& body, std::vector<Payload> payloads = {}) {
    ReportText(topic.name, topic.Encode(body), std::move(payloads));
  }
  // Thread-safe: queues an error (the scheduler fails the job with it) or timeline events.
  void SendError(const std::string& text);
  void SendTrace(std::string events);
  // Sends everything queued (waits up to timeout_s); used before a clean exit.
  void Flush();

  // Waits until `done()` holds, checking it again after every command received. Throws
  // std::runtime_error (saying `what` was awaited) on a shutdown or once timeout_s have passed.
  void WaitUntil(const std::function<bool()>& done, const std::string& what,
                 double timeout_s = 0);  // 0: the job's --timeout_s
  // Until the scheduler says to stop, or falls silent (no deadline of its own: the silence
  // bounds it), or `also()` holds (checked after every command). Check ShutdownRequested's
  // `failed` after.
  void WaitForShutdown(const std::function<bool()>& also = {});
  // True once the scheduler said to stop, or fell silent for longer than the timeout.
  // `failed` and `reason` say whether the job failed and why.
  bool ShutdownRequested(std::string* reason = nullptr, bool* failed = nullptr) const;
  const NodeInfo& self() const { return self_; }

  // Thread-safe. A worker says which step it is computing (-1: none); its heartbeats carry it
  // (common/busy_peers.h).
  void SetComputing(int64_t step) { computing_ = step; }
  // Thread-safe, from a command's handler too: this node followed membership view `number`
  // (common/view.h). A heartbeat says so at once, so that the scheduler learns how long a view
  // takes to reach every node.
  void NoteViewFollowed(int64_t number);
  // Thread-safe: when the scheduler last named `worker` as computing (-1: any worker but this
  // node); the clock's epoch if never.
  Clock::time_point ComputingSeen(int worker) const;

 private:
  void OnCommandText(const std::string& topic, Handler handler);
  void ReportText(const std::string& topic, std::string body, std::vector<Payload> payloads);
  void Loop();
  // Sends what was queued for the scheduler.
  void SendQueued();
  // Waits up to wait_ms for the scheduler (or a wake) and handles what it sent, setting
  // *last_heard at each message. Throws CodecError for a malformed message.
  void ReceiveAll(Clock::time_point* last_heard, long wait_ms);
  // Ends the thread's poll now (a send queued, the destructor).
  void Wake();
  void WakeLocked();  // under mu_
  void Dispatch(const Message& m);
  void Queue(Header h, std::vector<Payload> payloads);
  void Shutdown(const std::string& reason, bool failed);
  void SendHeartbeat();
  void OnHeartbeatAck(const Header& h);  // under mu_

  zmq::socket_t socket_;
  // Queue wakes the channel's thread through this inproc pair, so that a report (a norm the
  // servers wait for) leaves at once rather than after the thread's poll interval.
  zmq::socket_t wake_rx_, wake_tx_;  // wake_tx_ under mu_
  std::string scheduler_endpoint_;
  NodeInfo self_;
  double timeout_s_, heartbeat_s_;
  double silence_s_ = 0;  // 0: timeout_s_
  std::map<std::string, Handler> handlers_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<int64_t> computing_{-1};
  std::atomic<int64_t> view_followed_{-1};
  std::atomic<bool> beat_now_{false};   // a heartbeat before the interval is up
  std::atomic<bool> want_view_{false};  // changes came from a view it does not hold
  bool scheduler_silent_ = false;       // Register's, the channel thread's, then ~'s
  ViewAssembler views_;                 // on the channel's thread

  mutable std::mutex mu_;
  std::condition_variable changed_;  // a command arrived, the outbox drained, or a shutdown
  struct Outgoing {
    Header header;
    std::vector<Payload> payloads;
  };
  std::deque<Outgoing> outbox_;
  size_t unsent_ = 0;  // queued and not yet handed to the socket
  bool shutdown_ = false, failed_ = false;
  std::map<int, Clock::time_point> computing_seen_;  // by worker, from the heartbeats' answers
  Clock::time_point others_seen_{};                  // a worker's: another worker computed
  std::string reason_;
};

// When the job records a timeline (`enabled`): a tracer of this node whose events go to the
// scheduler, which writes the job's timeline; null otherwise. Flush it before the node reports
// done.
std::unique_ptr<Tracer> MakeNodeTracer(ControlChannel* control, bool enabled);

}  // namespace tteps
