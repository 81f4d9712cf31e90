// The ring's pair transport: one rank's links to its two ring neighbours, the seam under the
// ring algorithm (as Gloo's transport::Pair is under its algorithms). Sends go to the right
// neighbour, receives come from the left one; both are posted, then polled to completion. Two
// transports: MPI point-to-point (mpi_links.cc) and TCP through ZeroMQ (tcp_ring.h), which a
// ring rebuilt without a lost worker can reconnect.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace tteps::collectives {

// A posted operation that completed: the index-th send or receive of the round.
struct LinkEvent {
  bool recv = false;
  size_t index = 0;
};

class RingLinks {
 public:
  virtual ~RingLinks() = default;
  virtual int rank() const = 0;  // position in the ring
  virtual int size() const = 0;
  // The worker id at a ring position (the ring of survivors skips lost workers' ids).
  virtual int PeerId(int position) const { return position; }
  virtual std::string name() const = 0;

  // Sends n floats to the right neighbour; `data` must stay unchanged until the round ends.
  virtual void PostSend(const float* data, size_t n) = 0;
  // Receives n floats from the left neighbour into `into`; receives match in posting order.
  virtual void PostRecv(float* into, size_t n) = 0;
  // One posted operation that completed since the last call, if any. Throws
  // std::runtime_error on a message that breaks the protocol (a wrong size).
  virtual std::optional<LinkEvent> Poll() = 0;
  // Ends the round: the next operations are numbered from 0 again. `abandon`: operations still
  // outstanding are given up (a failed step); the links may then refuse further rounds.
  virtual void EndRound(bool abandon) = 0;
};

}  // namespace tteps::collectives
