// Allreduce of a float span across a group of workers: the seam between the ring backend and
// the algorithms (ours, or the MPI library's as a baseline), like Gloo's algorithm classes.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/busy_peers.h"
#include "worker/collectives/ring_links.h"

namespace tteps::collectives {

// A peer did not answer within the deadline; the message names the rank waited for, and
// peer() is that rank in the communicator (-1 when unknown, e.g. inside MPI_Allreduce).
class CollectiveTimeout : public std::runtime_error {
 public:
  CollectiveTimeout(const std::string& what, int peer) : std::runtime_error(what), peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

// The abort check said stop (the job failed elsewhere) while a collective was waiting.
class CollectiveAborted : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A worker of the group was lost while a collective was waiting: the collective is abandoned
// and the group must be rebuilt without it.
class MembershipChanged : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Allreduce {
 public:
  virtual ~Allreduce() = default;
  // Replaces data[0..n) on every rank by the element-wise sum over the group. Every rank ends
  // with the same bits. Throws CollectiveTimeout if the group does not complete in timeout_s.
  virtual void Sum(float* data, size_t n, double timeout_s) = 0;
  virtual std::string name() const = 0;
  // Polled while waiting: when it returns true the collective gives up with CollectiveAborted,
  // so that a worker stops at once when the scheduler ends a failed job.
  void set_abort_check(std::function<bool()> check) { abort_check_ = std::move(check); }
  // Polled too: true ends the wait with MembershipChanged (a transport that can be rebuilt).
  void set_membership_check(std::function<bool()> check) { membership_check_ = std::move(check); }
  // When another worker was last seen computing (called with -1): while one computes, the
  // deadline counts from then, not from the start (common/busy_peers.h).
  void set_busy_seen(BusySeen seen) { busy_seen_ = std::move(seen); }

 protected:
  bool ShouldAbort() const { return abort_check_ && abort_check_(); }
  bool MembershipChangedNow() const { return membership_check_ && membership_check_(); }
  // Whether a wait that began at `start` has run past `timeout` with no other worker computing
  // meanwhile.
  bool PastDeadline(Clock::time_point start, Clock::duration timeout) const {
    const auto now = Clock::now();
    if (now <= start + timeout) return false;
    return !busy_seen_ || now > BusyDeadline(start, timeout, busy_seen_(-1));
  }

 private:
  std::function<bool()> abort_check_, membership_check_;
  BusySeen busy_seen_;
};

// Our ring (scatter-reduce, then allgather; N-1 steps each) over nonblocking point-to-point
// messages between ring neighbours (worker/collectives/ring_links.h). Chunks are cut into
// segments of `segment_bytes` so that sending, receiving and reducing overlap.
std::unique_ptr<Allreduce> MakeRingAllreduce(std::unique_ptr<RingLinks> links,
                                             size_t segment_bytes = 1 << 20);
// The ring over MPI point-to-point messages; `comm` must outlive the object.
std::unique_ptr<Allreduce> MakeRingAllreduce(MPI_Comm comm, size_t segment_bytes = 1 << 20);

// MPI_Iallreduce(MPI_SUM), waited for with the deadline: the vendor baseline.
std::unique_ptr<Allreduce> MakeMpiAllreduce(MPI_Comm comm);

// "ring" or "mpi"; throws std::invalid_argument otherwise.
std::unique_ptr<Allreduce> MakeAllreduce(const std::string& kind, MPI_Comm comm);

}  // namespace tteps::collectives
