#include "common/kv_client.h"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "common/codec.h"
#include "common/transport.h"

namespace tteps {

struct KVClient::Reply {
  bool done = false;
  Message message;
};

KVClient::KVClient(zmq::context_t& ctx, const ClusterMap& map, const NodeInfo& self,
                   double timeout_s, std::function<bool()> abort)
    : map_(map), self_(self), timeout_s_(timeout_s), abort_(std::move(abort)) {
  for (const auto& server : map_.servers) {
    sockets_.push_back(MakeSocket(ctx, zmq::socket_type::dealer));
    sockets_.back().connect(server.endpoint);
  }
}

std::vector<KVClient::Reply> KVClient::RoundTrip(
    const std::function<void(size_t, zmq::socket_t&)>& make, const char* what) {
  const size_t n = sockets_.size();
  for (size_t s = 0; s < n; ++s) make(s, sockets_[s]);
  const uint64_t request = next_request_++;
  std::vector<Reply> replies(n);
  std::vector<zmq::pollitem_t> items(n);
  for (size_t s = 0; s < n; ++s) items[s] = {sockets_[s].handle(), 0, ZMQ_POLLIN, 0};
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  size_t pending = n;
  while (pending > 0) {
    if (abort_ && abort_()) throw std::runtime_error(std::string(what) + " aborted: shutdown");
    if (std::chrono::steady_clock::now() > deadline) {
      std::string missing;
      for (size_t s = 0; s < n; ++s) {
        if (!replies[s].done) missing += (missing.empty() ? "" : ", ") + map_.servers[s].Name();
      }
      throw std::runtime_error(std::string(what) + " by " + self_.Name() + ": no answer within " +
                               std::to_string(timeout_s_) + " s (--timeout_s) from " + missing);
    }
    zmq::poll(items.data(), n, std::chrono::milliseconds(50));
    for (size_t s = 0; s < n; ++s) {
      if (replies[s].done || !(items[s].revents & ZMQ_POLLIN)) continue;
      Message m;
      try {
        if (!ReceiveMessage(sockets_[s], false, 0, &m)) continue;
      } catch (const CodecError& e) {
        throw std::runtime_error(std::string(what) + ": malformed reply from " +
                                 map_.servers[s].Name() + ": " + e.what());
      }
      if (m.header.request_id != request) continue;  // a late reply to an abandoned request
      if (m.header.type == MsgType::kError) {
        throw std::runtime_error(map_.servers[s].Name() + " refused the " + what + " of " +
                                 self_.Name() + ": " + m.header.text);
      }
      replies[s].done = true;
      replies[s].message = std::move(m);
      --pending;
    }
  }
  return replies;
}

namespace {

Header DataHeader(MsgType type, const NodeInfo& self, uint64_t request, uint64_t fingerprint,
                  const KeyRange& range) {
  Header h;
  h.type = type;
  h.sender_role = self.role;
  h.sender_id = self.id;
  h.request_id = request;
  h.fingerprint = fingerprint;
  h.ranges = {range};
  return h;
}

}  // namespace

void KVClient::Init(const float* values) {
  // Init happens once: a copy keeps the zero-copy send independent of the caller's buffer.
  auto copy = std::make_shared<std::vector<float>>(values, values + map_.param_count);
  RoundTrip(
      [&](size_t s, zmq::socket_t& sock) {
        const KeyRange& r = map_.ranges[s];
        Header h = DataHeader(MsgType::kInit, self_, next_request_, map_.fingerprint, r);
        SendMessage(sock, h, {{copy, copy->data() + r.begin, static_cast<size_t>(r.size())}});
      },
      "init");
}

void KVClient::Push(std::shared_ptr<const std::vector<float>> grad, int64_t version,
                    int64_t samples, double mean_grad_norm) {
  if (static_cast<int64_t>(grad->size()) != map_.param_count) {
    throw std::invalid_argument("push of " + std::to_string(grad->size()) + " floats, expected " +
                                std::to_string(map_.param_count));
  }
  RoundTrip(
      [&](size_t s, zmq::socket_t& sock) {
        const KeyRange& r = map_.ranges[s];
        Header h = DataHeader(MsgType::kPush, self_, next_request_, map_.fingerprint, r);
        h.step = version;
        h.samples = samples;
        h.norm = mean_grad_norm;
        SendMessage(sock, h, {{grad, grad->data() + r.begin, static_cast<size_t>(r.size())}});
      },
      "push");
}

PullResult KVClient::Pull(int64_t want, float* out) {
  auto replies = RoundTrip(
      [&](size_t s, zmq::socket_t& sock) {
        Header h =
            DataHeader(MsgType::kPull, self_, next_request_, map_.fingerprint, map_.ranges[s]);
        h.step = want;
        SendMessage(sock, h);
      },
      "pull");
  PullResult r;
  r.version = INT64_MAX;
  for (size_t s = 0; s < replies.size(); ++s) {
    const Message& m = replies[s].message;
    const KeyRange& range = map_.ranges[s];
    if (m.payloads.size() != 1 || !(m.header.ranges[0] == range)) {
      throw std::runtime_error("pull reply from " + map_.servers[s].Name() +
                               " does not hold the range " + range.ToString());
    }
    std::memcpy(out + range.begin, m.floats(0), range.size() * sizeof(float));
    r.version = std::min(r.version, m.header.step);
    r.held_s = std::max(r.held_s, m.header.held_s);
  }
  return r;
}

}  // namespace tteps
