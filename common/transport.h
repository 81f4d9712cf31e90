// ZeroMQ plumbing: sockets that never linger, and sending / receiving one tteps message
// (Cereal header frame + raw float32 payload frames) with zero-copy payloads.
#pragma once

#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/message.h"

namespace tteps {

// A received message. Payload frames are kept as received and read in place.
struct Message {
  std::string peer;  // routing id of the sender (ROUTER sockets only)
  Header header;
  std::vector<zmq::message_t> payloads;

  const float* floats(size_t i) const { return payloads[i].data<float>(); }
  size_t num_floats(size_t i) const { return payloads[i].size() / sizeof(float); }
};

// A payload to send without copying: `owner` keeps the memory alive until ZeroMQ has sent it.
struct Payload {
  std::shared_ptr<const void> owner;
  const void* data = nullptr;
  size_t count = 0;                  // elements
  size_t elem_size = sizeof(float);  // bytes per element (2: bf16)
};

// ZMQ_LINGER 0 so that closing never blocks on unsent messages; ROUTER sockets report an
// unroutable peer as an error instead of dropping the message. On a context with a
// CurveSecurity (common/curve.h), the socket uses CURVE.
zmq::socket_t MakeSocket(zmq::context_t& ctx, zmq::socket_type type);

// Binds TCP on `bind_host` only (a numeric address of this host; never every interface) and
// `port` (0: an ephemeral one), and logs "listening: tcp://<bind_host>:<port>". Returns the
// endpoint peers connect to: "tcp://<advertise_host, or bind_host if empty>:<port>".
std::string BindTcp(zmq::socket_t& socket, const std::string& bind_host,
                    const std::string& advertise_host = "", int port = 0);

// Sends header + payloads (header.payload_bytes is filled in here). `peer` for ROUTER sockets,
// which never block: returns false if the peer vanished or does not read (its queue is full).
bool SendMessage(zmq::socket_t& socket, Header header, const std::vector<Payload>& payloads = {},
                 const std::string& peer = "");

// zmq::poll, where an interruption by a signal (EINTR) is "nothing ready yet": a caught SIGTERM
// (common/interrupt.h) must not fail the loop that reads its flag next.
int Poll(zmq::pollitem_t* items, size_t n, long timeout_ms);

// Waits up to timeout_ms for a message. Returns false if none arrived. Throws CodecError if
// the message is malformed; `bad_peer` then holds the sender's routing id (ROUTER sockets) so
// that the caller can answer with an error. All frames of the message are consumed either way.
bool ReceiveMessage(zmq::socket_t& socket, bool router, long timeout_ms, Message* out,
                    std::string* bad_peer = nullptr);

}  // namespace tteps
