// Allreduce of a float span across a group of workers: the seam between the ring backend and
// the algorithms (ours, or the MPI library's as a baseline), like Gloo's algorithm classes.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

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

 protected:
  bool ShouldAbort() const { return abort_check_ && abort_check_(); }

 private:
  std::function<bool()> abort_check_;
};

// Our ring (scatter-reduce, then allgather; N-1 steps each) over nonblocking point-to-point
// messages between ring neighbours. Chunks are cut into segments of `segment_bytes` so that
// sending, receiving and reducing overlap. `comm` must outlive the object.
std::unique_ptr<Allreduce> MakeRingAllreduce(MPI_Comm comm, size_t segment_bytes = 1 << 20);

// MPI_Iallreduce(MPI_SUM), waited for with the deadline: the vendor baseline.
std::unique_ptr<Allreduce> MakeMpiAllreduce(MPI_Comm comm);

// "ring" or "mpi"; throws std::invalid_argument otherwise.
std::unique_ptr<Allreduce> MakeAllreduce(const std::string& kind, MPI_Comm comm);

}  // namespace tteps::collectives
