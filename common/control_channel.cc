#include "common/control_channel.h"

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

#include "common/cereal_body.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/transport.h"

namespace tteps {
namespace {

constexpr long kPollMs = 20;       // registration's
constexpr long kMaxPollMs = 1000;  // the loop's longest sleep

// The channel whose command handler this thread runs (under its lock), if any.
thread_local const ControlChannel* dispatching = nullptr;

}  // namespace

ControlChannel::ControlChannel(zmq::context_t& ctx, const std::string& scheduler_endpoint,
                               NodeInfo self, double timeout_s, double heartbeat_s)
    : socket_(MakeSocket(ctx, zmq::socket_type::dealer)),
      wake_rx_(ctx, zmq::socket_type::pair),
      wake_tx_(ctx, zmq::socket_type::pair),
      scheduler_endpoint_(scheduler_endpoint),
      self_(std::move(self)),
      timeout_s_(timeout_s),
      heartbeat_s_(heartbeat_s) {
  socket_.connect(scheduler_endpoint_);
  // A name of its own: a channel made where a closed one lived may find that one's inproc name
  // still bound (ZeroMQ closes sockets in the background).
  static std::atomic<uint64_t> channels{0};
  const std::string wake = "inproc://tteps-control-wake-" + std::to_string(++channels);
  wake_rx_.set(zmq::sockopt::linger, 0);
  wake_tx_.set(zmq::sockopt::linger, 0);
  wake_rx_.bind(wake);
  wake_tx_.connect(wake);
}

ControlChannel::~ControlChannel() {
  running_ = false;
  Wake();
  if (thread_.joinable()) thread_.join();
  // The last words (a server's statistics, a node's error) may still wait in ZeroMQ's queue,
  // behind a timeline of megabytes on a slow link: sockets drop theirs at close
  // (common/transport.cc), and the scheduler would wait for words that never come. Up to 2 s for
  // them to leave, unless nobody waits for them: the scheduler is silent, never answered, or
  // ended the job as failed (it then waits for nothing and may be gone).
  bool failed_by_scheduler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed_by_scheduler = shutdown_ && failed_;
  }
  socket_.set(zmq::sockopt::linger, scheduler_silent_ || failed_by_scheduler ? 0 : 2000);
}

ClusterMap ControlChannel::Register() {
  Header h;
  h.type = MsgType::kRegister;
  h.sender_role = self_.role;
  h.sender_id = self_.id;
  h.text = EncodeBody(self_);
  SendMessage(socket_, h);
  const auto start = Clock::now();
  while (SecondsSince(start) < timeout_s_) {
    Message m;
    try {
      if (!ReceiveMessage(socket_, false, kPollMs * 5, &m)) continue;
    } catch (const ProtocolVersionError& e) {
      scheduler_silent_ = true;  // to this release
      throw std::runtime_error("the scheduler at " + scheduler_endpoint_ +
                               " runs another tteps release: it speaks protocol version " +
                               std::to_string(e.version()) + ", " + self_.Name() + " version " +
                               std::to_string(kProtocolVersion) +
                               "; every host of a job needs the same tteps release "
                               "(docs/compatibility.md)");
    } catch (const CodecError& e) {
      LOG(ERROR) << "malformed message from the scheduler ignored: " << e.what();
      continue;
    }
    if (m.header.type == MsgType::kClusterMap) {
      ClusterMap map;
      DecodeBody(m.header.text, &map);
      self_.id = map.your_id;
      return map;
    }
    if (m.header.type == MsgType::kShutdown || m.header.type == MsgType::kError) {
      throw std::runtime_error("the scheduler refused " + self_.Name() + ": " + m.header.text);
    }
  }
  scheduler_silent_ = true;
  throw std::runtime_error("the scheduler at " + scheduler_endpoint_ + " did not answer the " +
                           "registration of " + self_.Name() + " within " +
                           std::to_string(timeout_s_) + " s (--timeout_s)");
}

void ControlChannel::OnCommandText(const std::string& topic, Handler handler) {
  if (running_) throw std::logic_error("ControlChannel::OnCommand after Start");
  handlers_[topic] = std::move(handler);
}

void ControlChannel::OnView(std::function<void(const View&)> handler) {
  OnCommand(kView, [this, handler = std::move(handler)](const ViewUpdate& update) {
    const std::optional<View> view = views_.Take(update);
    if (!view) {
      LOG(WARNING) << "the changes of view " << update.view.number << " are from view "
                   << update.base << ", which this node does not hold: it asks for the whole view";
      want_view_ = true;
      beat_now_ = true;
      return;
    }
    if (update.base < 0) want_view_ = false;
    handler(*view);
  });
}

void ControlChannel::SetTiming(double timeout_s, double heartbeat_s, double silence_s) {
  if (running_) throw std::logic_error("ControlChannel::SetTiming after Start");
  timeout_s_ = timeout_s;
  heartbeat_s_ = heartbeat_s;
  silence_s_ = silence_s;
}

void ControlChannel::Start() {
  running_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void ControlChannel::ReportText(const std::string& topic, std::string body,
                                std::vector<Payload> payloads) {
  Header h;
  h.type = MsgType::kReport;
  h.topic = topic;
  h.text = std::move(body);
  Queue(std::move(h), std::move(payloads));
}

void ControlChannel::SendError(const std::string& text) {
  Header h;
  h.type = MsgType::kError;
  h.text = text;
  Queue(std::move(h), {});
}

void ControlChannel::SendTrace(std::string events) {
  Header h;
  h.type = MsgType::kTrace;
  h.text = std::move(events);
  Queue(std::move(h), {});
}

void ControlChannel::Queue(Header h, std::vector<Payload> payloads) {
  h.sender_role = self_.role;
  h.sender_id = self_.id;
  std::lock_guard<std::mutex> lock(mu_);
  outbox_.push_back({std::move(h), std::move(payloads)});
  ++unsent_;
  WakeLocked();
}

void ControlChannel::NoteViewFollowed(int64_t number) {
  view_followed_ = number;
  beat_now_ = true;
  // A handler runs on the channel's thread under mu_, and its loop beats right after it. (Not
  // told by thread_'s id: the thread may run a handler before Start has stored it.)
  if (dispatching != this) Wake();
}

void ControlChannel::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  WakeLocked();
}

void ControlChannel::WakeLocked() {
  // Full (the thread is behind anyway): nothing lost, the thread sends all it finds queued.
  (void)wake_tx_.send(zmq::message_t(), zmq::send_flags::dontwait);
}

void ControlChannel::WaitUntil(const std::function<bool()>& done, const std::string& what,
                               double timeout_s) {
  const bool job_timeout = timeout_s <= 0;
  if (job_timeout) timeout_s = timeout_s_;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  std::unique_lock<std::mutex> lock(mu_);
  while (!done()) {
    if (shutdown_) throw std::runtime_error("stopped while waiting for " + what + ": " + reason_);
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !done()) {
      throw std::runtime_error(self_.Name() + ": " + what + " did not come within " +
                               std::to_string(timeout_s) + " s" +
                               (job_timeout ? " (--timeout_s)" : ""));
    }
  }
}

void ControlChannel::WaitForShutdown(const std::function<bool()>& also) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return shutdown_ || !running_ || (also && also()); });
}

void ControlChannel::Flush() {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s_));
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_until(lock, deadline, [this] { return unsent_ == 0 || !running_; });
}

bool ControlChannel::ShutdownRequested(std::string* reason, bool* failed) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (reason) *reason = reason_;
  if (failed) *failed = failed_;
  return shutdown_;
}

void ControlChannel::Shutdown(const std::string& reason, bool failed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    failed_ = failed;
    reason_ = reason;
  }
  changed_.notify_all();
}

void ControlChannel::SendHeartbeat() {
  Header h;
  h.type = MsgType::kHeartbeat;
  h.sender_role = self_.role;
  h.sender_id = self_.id;
  h.text = EncodeCereal(HeartbeatBody{computing_.load(), view_followed_.load(), want_view_.load()});
  SendMessage(socket_, h);
}

void ControlChannel::OnHeartbeatAck(const Header& h) {
  if (h.text.empty()) return;  // an answer that names nobody
  const auto now = Clock::now();
  const HeartbeatAck ack = DecodeCereal<HeartbeatAck>(h.text);
  if (ack.others_computing) others_seen_ = now;
  ack.ForEachComputing([&](int worker) { computing_seen_[worker] = now; });
}

Clock::time_point ControlChannel::ComputingSeen(int worker) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (worker >= 0) {
    const auto it = computing_seen_.find(worker);
    return it == computing_seen_.end() ? Clock::time_point{} : it->second;
  }
  Clock::time_point latest = others_seen_;
  for (const auto& [w, at] : computing_seen_) {
    if (!(self_.role == Role::kWorker && w == self_.id)) latest = std::max(latest, at);
  }
  return latest;
}

void ControlChannel::Loop() {
  auto last_heartbeat = Clock::now() - std::chrono::hours(1);
  auto last_heard = Clock::now();
  const double limit_s = silence_s_ > 0 ? silence_s_ : timeout_s_;
  while (running_) {
    SendQueued();
    if (beat_now_.exchange(false) || SecondsSince(last_heartbeat) >= heartbeat_s_) {
      SendHeartbeat();
      last_heartbeat = Clock::now();
    }
    try {
      // Until the next heartbeat is due or the silence runs out: whatever must go sooner (a
      // queued report, the destructor) wakes the poll, so that a host of a thousand idle nodes
      // is not woken 50 times a second each.
      const double due_s =
          std::min(heartbeat_s_ - SecondsSince(last_heartbeat), limit_s - SecondsSince(last_heard));
      ReceiveAll(&last_heard, std::clamp<long>(std::lround(due_s * 1e3) + 1, 1, kMaxPollMs));
    } catch (const CodecError& e) {
      LOG(ERROR) << "malformed message from the scheduler ignored: " << e.what();
    }
    if (SecondsSince(last_heard) > limit_s) {
      scheduler_silent_ = true;
      Shutdown("the scheduler at " + scheduler_endpoint_ + " has been silent for " +
                   std::to_string(SecondsSince(last_heard)).substr(0, 4) + " s (" +
                   (silence_s_ > 0 ? "--silence_s" : "--timeout_s") + ")",
               true);
      last_heard = Clock::now();
    }
  }
  changed_.notify_all();
}

void ControlChannel::SendQueued() {
  std::deque<Outgoing> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(outbox_);
  }
  for (auto& o : out) SendMessage(socket_, o.header, o.payloads);
  if (out.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unsent_ -= out.size();
  }
  changed_.notify_all();
}

void ControlChannel::ReceiveAll(Clock::time_point* last_heard, long wait_ms) {
  zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                             {wake_rx_.handle(), 0, ZMQ_POLLIN, 0}};
  Poll(items, 2, wait_ms);
  if (items[1].revents & ZMQ_POLLIN) {
    zmq::message_t wake;
    while (wake_rx_.recv(wake, zmq::recv_flags::dontwait)) {
    }
  }
  Message m;
  while (ReceiveMessage(socket_, false, 0, &m)) {
    *last_heard = Clock::now();
    Dispatch(m);
  }
}

void ControlChannel::Dispatch(const Message& m) {
  switch (m.header.type) {
    case MsgType::kCommand: {
      auto it = handlers_.find(m.header.topic);
      if (it == handlers_.end()) {
        LOG(ERROR) << "command '" << m.header.topic
                   << "' from the scheduler ignored: " << RoleName(self_.role)
                   << "s do not know it";
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        struct Dispatching {
          explicit Dispatching(const ControlChannel* c) { dispatching = c; }
          ~Dispatching() { dispatching = nullptr; }
        } in_handler(this);
        it->second(m.header);
      }
      changed_.notify_all();
      return;
    }
    case MsgType::kShutdown:
      Shutdown(m.header.text, !m.header.text.empty());
      return;
    case MsgType::kError:
      LOG(ERROR) << "scheduler: " << m.header.text;
      return;
    case MsgType::kHeartbeat: {
      std::lock_guard<std::mutex> lock(mu_);
      OnHeartbeatAck(m.header);
      return;
    }
    default:
      return;
  }
}

std::unique_ptr<Tracer> MakeNodeTracer(ControlChannel* control, bool enabled) {
  if (!enabled) return nullptr;
  const NodeInfo& self = control->self();
  // Process ids in the viewer: servers 100 + id, workers 200 + id.
  const int pid = (self.role == Role::kServer ? 100 : 200) + self.id;
  return std::make_unique<Tracer>(pid, self.Name(),
                                  [control](std::string events) { control->SendTrace(events); });
}

}  // namespace tteps
