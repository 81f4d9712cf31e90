// Ring links over TCP through ZeroMQ: the transport a ring can be rebuilt on. Each worker
// binds one ROUTER socket for what its left neighbour sends, and connects a DEALER to its
// right neighbour's. Every message carries the ring's generation: after a worker is lost the
// survivors build the next generation's ring and reconnect; messages of an older ring are
// dropped, those of a newer one (a neighbour that rebuilt first) wait for it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "worker/collectives/ring_links.h"

namespace tteps::collectives {

// The ring's messages are segments of at most this many bytes (MakeRingAllreduce's default).
constexpr size_t kRingSegmentBytes = size_t{1} << 20;

// The workers in a ring, in ring order, and where each listens.
struct RingMembers {
  uint32_t generation = 0;
  std::vector<int> ids;  // worker ids
  std::vector<std::string> endpoints;
};

class TcpRing {
 public:
  // Binds the receiving socket on `bind_host` (an ephemeral port). A message larger than
  // `max_bytes` ends its connection; one that is not a ring message of the left neighbour is
  // dropped and logged.
  TcpRing(zmq::context_t& ctx, const std::string& bind_host, const std::string& advertise_host,
          size_t max_bytes = kRingSegmentBytes);
  ~TcpRing();
  TcpRing(const TcpRing&) = delete;
  TcpRing& operator=(const TcpRing&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  // The links of worker `self` in ring `members`, whose generation must be later than the last
  // one's. One links object at a time, used with this object from one thread.
  std::unique_ptr<RingLinks> Links(const RingMembers& members, int self);
  int64_t dropped() const { return dropped_; }

 private:
  friend class TcpLinks;
  // Reads every message waiting on the socket into the inbox of its generation.
  void Receive();
  std::deque<zmq::message_t>& Inbox() { return inbox_[generation_]; }

  zmq::context_t& ctx_;
  int self_ = -1;
  zmq::socket_t socket_;
  std::string endpoint_;
  size_t max_bytes_;
  uint32_t generation_ = 0;
  int left_ = -1;  // the left neighbour's id in the current ring
  bool started_ = false;
  std::map<uint32_t, std::deque<zmq::message_t>> inbox_;  // generation -> payloads in order
  int64_t dropped_ = 0;
};

}  // namespace tteps::collectives
