#include "common/control_channel.h"

#include <glog/logging.h>

#include "common/codec.h"
#include "common/transport.h"

namespace tteps {
namespace {

using Clock = std::chrono::steady_clock;
constexpr long kPollMs = 20;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

ControlChannel::ControlChannel(zmq::context_t& ctx, const std::string& scheduler_endpoint,
                               NodeInfo self, double timeout_s, double heartbeat_s)
    : socket_(MakeSocket(ctx, zmq::socket_type::dealer)),
      scheduler_endpoint_(scheduler_endpoint),
      self_(std::move(self)),
      timeout_s_(timeout_s),
      heartbeat_s_(heartbeat_s) {
  socket_.connect(scheduler_endpoint_);
}

ControlChannel::~ControlChannel() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
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
  throw std::runtime_error("the scheduler at " + scheduler_endpoint_ + " did not answer the " +
                           "registration of " + self_.Name() + " within " +
                           std::to_string(timeout_s_) + " s (--timeout_s)");
}

void ControlChannel::Start() {
  running_ = true;
  thread_ = std::thread([this] { Loop(); });
}

std::optional<double> ControlChannel::TakeNorm(int64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = norms_.find(version);
  if (it == norms_.end()) return std::nullopt;
  const double norm = it->second;
  norms_.erase(it);
  return norm;
}

void ControlChannel::Send(MsgType type, int64_t step, std::string text, int64_t samples,
                          double norm) {
  Header h;
  h.text = std::move(text);
  h.norm = norm;
  Queue(type, step, samples, std::move(h), {});
}

void ControlChannel::SendWithPayloads(MsgType type, int64_t step, int64_t samples,
                                      std::vector<Payload> payloads) {
  Queue(type, step, samples, Header{}, std::move(payloads));
}

void ControlChannel::Queue(MsgType type, int64_t step, int64_t samples, Header h,
                           std::vector<Payload> payloads) {
  h.type = type;
  h.sender_role = self_.role;
  h.sender_id = self_.id;
  h.step = step;
  h.samples = samples;
  std::lock_guard<std::mutex> lock(mu_);
  outbox_.push_back({std::move(h), std::move(payloads)});
  ++queued_;
}

void ControlChannel::WaitForGo() {
  const auto start = Clock::now();
  while (!go_.load()) {
    std::string reason;
    if (ShutdownRequested(&reason)) throw std::runtime_error("stopped before training: " + reason);
    if (SecondsSince(start) > timeout_s_) {
      throw std::runtime_error(self_.Name() + ": the scheduler did not start training within " +
                               std::to_string(timeout_s_) + " s (--timeout_s) of it being ready");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void ControlChannel::Flush() {
  const auto start = Clock::now();
  while (queued_.load() > 0 && running_ && SecondsSince(start) < timeout_s_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool ControlChannel::ShutdownRequested(std::string* reason, bool* failed) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (reason) *reason = reason_;
  if (failed) *failed = failed_;
  return shutdown_;
}

void ControlChannel::Stop(const std::string& reason, bool failed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  shutdown_ = true;
  failed_ = failed;
  reason_ = reason;
}

void ControlChannel::Loop() {
  auto last_heartbeat = Clock::now() - std::chrono::hours(1);
  auto last_heard = Clock::now();
  while (running_) {
    std::deque<Outgoing> out;
    {
      std::lock_guard<std::mutex> lock(mu_);
      out.swap(outbox_);
    }
    for (auto& o : out) {
      SendMessage(socket_, o.header, o.payloads);
      --queued_;
    }
    if (SecondsSince(last_heartbeat) >= heartbeat_s_) {
      Header h;
      h.type = MsgType::kHeartbeat;
      h.sender_role = self_.role;
      h.sender_id = self_.id;
      SendMessage(socket_, h);
      last_heartbeat = Clock::now();
    }
    Message m;
    try {
      while (ReceiveMessage(socket_, false, kPollMs, &m)) {
        last_heard = Clock::now();
        switch (m.header.type) {
          case MsgType::kSetAccumulation:
            accumulation_ = m.header.samples;
            break;
          case MsgType::kStop:
            stop_requested_ = true;
            break;
          case MsgType::kGo:
            go_ = true;
            break;
          case MsgType::kNormTotal: {
            std::lock_guard<std::mutex> lock(mu_);
            norms_[m.header.step] = m.header.norm;
            break;
          }
          case MsgType::kShutdown:
            Stop(m.header.text, !m.header.text.empty());
            break;
          case MsgType::kError:
            LOG(ERROR) << "scheduler: " << m.header.text;
            break;
          default:
            break;  // heartbeat acknowledgements only refresh last_heard
        }
      }
    } catch (const CodecError& e) {
      LOG(ERROR) << "malformed message from the scheduler ignored: " << e.what();
    }
    if (SecondsSince(last_heard) > timeout_s_) {
      Stop("the scheduler at " + scheduler_endpoint_ + " has been silent for " +
               std::to_string(static_cast<int>(SecondsSince(last_heard))) + " s (--timeout_s)",
           true);
      last_heard = Clock::now();
    }
  }
}

std::unique_ptr<Tracer> MakeNodeTracer(ControlChannel* control, bool enabled) {
  if (!enabled) return nullptr;
  const NodeInfo& self = control->self();
  // Process ids in the viewer: servers 100 + id, workers 200 + id.
  const int pid = (self.role == Role::kServer ? 100 : 200) + self.id;
  return std::make_unique<Tracer>(pid, self.Name(), [control](std::string events) {
    control->Send(MsgType::kTrace, 0, std::move(events));
  });
}

}  // namespace tteps
