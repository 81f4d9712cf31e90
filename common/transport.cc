#include "common/transport.h"

#include <glog/logging.h>

#include <cerrno>
#include <zmq_addon.hpp>

#include "common/codec.h"
#include "common/curve.h"

namespace tteps {
namespace {

void ReleaseOwner(void* /*data*/, void* hint) {
  delete static_cast<std::shared_ptr<const void>*>(hint);
}

}  // namespace

zmq::socket_t MakeSocket(zmq::context_t& ctx, zmq::socket_type type) {
  zmq::socket_t s(ctx, type);
  s.set(zmq::sockopt::linger, 0);
  if (type == zmq::socket_type::router) s.set(zmq::sockopt::router_mandatory, 1);
  if (const CurveSecurity* curve = SecurityOf(ctx)) curve->Apply(s, type);
  return s;
}

std::string BindTcp(zmq::socket_t& socket, const std::string& bind_host,
                    const std::string& advertise_host, int port) {
  // Thousands of nodes may connect at once (a job's start): ZeroMQ's default backlog of 100
  // would drop the others' connection requests, which TCP then retries after 1, 3, 7, ... s.
  // The kernel caps it at net.core.somaxconn.
  socket.set(zmq::sockopt::backlog, 4096);
  socket.bind("tcp://" + bind_host + ":" + (port > 0 ? std::to_string(port) : "*"));
  const std::string last = socket.get(zmq::sockopt::last_endpoint);  // tcp://HOST:PORT
  LOG(INFO) << "listening: " << last;
  return "tcp://" + (advertise_host.empty() ? bind_host : advertise_host) +
         last.substr(last.rfind(':'));
}

bool SendMessage(zmq::socket_t& socket, Header header, const std::vector<Payload>& payloads,
                 const std::string& peer) {
  header.payload_bytes.clear();
  for (const auto& p : payloads) header.payload_bytes.push_back(p.count * p.elem_size);
  const std::string head = EncodeHeader(header);
  // A message goes whole or not at all: a full queue (EAGAIN, an empty result) on the first
  // frame drops it, and the caller hears about it. A ROUTER never waits for a peer: one that
  // does not read its replies (its queue is full) must not stall a server or the scheduler.
  const auto wait = peer.empty() ? zmq::send_flags::none : zmq::send_flags::dontwait;
  const auto more = wait | zmq::send_flags::sndmore;
  auto sent = [](const zmq::send_result_t& r) { return r.has_value(); };
  try {
    if (!peer.empty() && !sent(socket.send(zmq::buffer(peer), more))) return false;
    if (!sent(socket.send(zmq::buffer(head), payloads.empty() ? wait : more))) return false;
    for (size_t i = 0; i < payloads.size(); ++i) {
      const Payload& p = payloads[i];
      auto* hint = new std::shared_ptr<const void>(p.owner);
      zmq::message_t frame(const_cast<void*>(p.data), p.count * p.elem_size, &ReleaseOwner, hint);
      if (!sent(socket.send(frame, i + 1 < payloads.size() ? more : wait))) return false;
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return false;
    throw;
  }
  return true;
}

int Poll(zmq::pollitem_t* items, size_t n, long timeout_ms) {
  try {
    return zmq::poll(items, n, std::chrono::milliseconds(timeout_ms));
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    for (size_t i = 0; i < n; ++i) items[i].revents = 0;
    return 0;
  }
}

bool ReceiveMessage(zmq::socket_t& socket, bool router, long timeout_ms, Message* out,
                    std::string* bad_peer) {
  // A message already queued is taken without a poll (a system call and, on a busy host, a
  // switch of task per message).
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (timeout_ms == 0 || Poll(&item, 1, timeout_ms) == 0) return false;
    if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      return false;
    }
  }
  size_t first = 0;
  out->peer.clear();
  if (router) {
    out->peer = frames[0].to_string();
    first = 1;
  }
  if (bad_peer) *bad_peer = out->peer;
  if (frames.size() <= first) throw CodecError("message without a header frame");
  out->header = DecodeHeader(frames[first].data(), frames[first].size());
  out->payloads.clear();
  std::vector<size_t> sizes;
  for (size_t i = first + 1; i < frames.size(); ++i) {
    sizes.push_back(frames[i].size());
    // Small frames may point into ZeroMQ's shared receive buffer at any offset; floats are read
    // in place, so such a frame is copied to aligned memory (large frames never are).
    if (reinterpret_cast<uintptr_t>(frames[i].data()) % alignof(float) != 0) {
      frames[i] = zmq::message_t(frames[i].data(), frames[i].size());
    }
    out->payloads.push_back(std::move(frames[i]));
  }
  ValidatePayloads(out->header, sizes);
  return true;
}

}  // namespace tteps
