// Ring allreduce. With N ranks the buffer is cut into N chunks (balanced; some are empty when
// the buffer has fewer than N floats). Rank r sends to r+1 and receives from r-1:
//   scatter-reduce, step s = 0..N-2: send chunk (r - s), receive chunk (r - s - 1) and add it
//     into ours; after N-1 steps rank r holds the full sum of chunk (r + 1).
//   allgather, step s = 0..N-2: send chunk (r + 1 - s), receive chunk (r - s) and copy it.
// r is the position in the ring (worker/collectives/ring_links.h), not necessarily the id.
// Each rank sends and receives 2 (N-1)/N of the buffer in all. Every final chunk is summed on
// one rank and copied to the others, so all ranks end with the same bits.
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "worker/collectives/allreduce.h"
#include "worker/collectives/mpi_links.h"

namespace tteps::collectives {
namespace {

class RingAllreduce : public Allreduce {
 public:
  RingAllreduce(std::unique_ptr<RingLinks> links, size_t segment_bytes)
      : links_(std::move(links)),
        segment_(std::max<size_t>(1, segment_bytes / sizeof(float))),
        rank_(links_->rank()),
        size_(links_->size()) {}

  std::string name() const override { return "ring"; }

  void Sum(float* data, size_t n, double timeout_s) override {
    if (size_ == 1 || n == 0) return;
    start_ = Clock::now();
    timeout_ =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    auto chunk_begin = [&](int c) { return n * static_cast<size_t>(c) / size_; };
    auto chunk = [&](int c) {
      c = ((c % size_) + size_) % size_;
      return std::make_pair(chunk_begin(c), chunk_begin(c + 1));
    };
    recv_.resize(n / size_ + 1);
    for (int phase = 0; phase < 2; ++phase) {
      const bool reduce = phase == 0;
      for (int s = 0; s < size_ - 1; ++s) {
        const auto [send_b, send_e] = reduce ? chunk(rank_ - s) : chunk(rank_ + 1 - s);
        const auto [recv_b, recv_e] = reduce ? chunk(rank_ - s - 1) : chunk(rank_ - s);
        Step(data + send_b, send_e - send_b, data + recv_b, recv_e - recv_b, reduce,
             reduce ? "scatter-reduce" : "allgather", s);
      }
    }
  }

 private:
  // One ring step: the send chunk goes right in segments; the receive chunk comes from the
  // left in segments, each reduced (or copied) as soon as it has arrived.
  void Step(const float* send, size_t send_n, float* dst, size_t recv_n, bool reduce,
            const char* phase, int step) {
    const size_t send_segments = (send_n + segment_ - 1) / segment_;
    const size_t recv_segments = (recv_n + segment_ - 1) / segment_;
    // Receive straight into place when copying (allgather); into a scratch buffer to reduce.
    float* landing = reduce ? recv_.data() : dst;
    for (size_t i = 0; i < recv_segments; ++i) {
      const size_t b = i * segment_;
      links_->PostRecv(landing + b, std::min(segment_, recv_n - b));
    }
    for (size_t i = 0; i < send_segments; ++i) {
      const size_t b = i * segment_;
      links_->PostSend(send + b, std::min(segment_, send_n - b));
    }
    size_t pending = send_segments + recv_segments, recvs_pending = recv_segments;
    int polls = 0;
    while (pending > 0) {
      if (const auto done = links_->Poll()) {
        --pending;
        if (done->recv) {
          --recvs_pending;
          if (reduce) {
            const size_t b = done->index * segment_, len = std::min(segment_, recv_n - b);
            float* out = dst + b;
            const float* in = recv_.data() + b;
            for (size_t k = 0; k < len; ++k) out[k] += in[k];
          }
        }
        polls = 0;
        continue;
      }
      if (++polls % 256 != 0) continue;  // the clock and the checks are not free
      // Nothing arrived for a while (the peer is still computing): give the core back to the
      // training thread instead of spinning. Messages in flight progress only inside MPI
      // calls, so the pause stays short.
      if (polls >= 4096) std::this_thread::sleep_for(std::chrono::microseconds(20));
      // Data still missing from the left means the left neighbour stalls; otherwise our sends
      // are not being received on the right.
      const int left = (rank_ + size_ - 1) % size_, right = (rank_ + 1) % size_;
      const int peer = recvs_pending > 0 ? left : right;
      const std::string where = "ring allreduce on worker " + std::to_string(links_->PeerId(rank_));
      if (ShouldAbort()) {
        links_->EndRound(true);
        throw CollectiveAborted(where + " abandoned: the job is stopping");
      }
      if (MembershipChangedNow()) {
        links_->EndRound(true);
        throw MembershipChanged(where + " abandoned: a worker was lost");
      }
      if (PastDeadline(start_, timeout_)) {
        links_->EndRound(true);
        throw CollectiveTimeout(where + ", " + phase + " step " + std::to_string(step) +
                                    ": waited in vain for worker " +
                                    std::to_string(links_->PeerId(peer)) +
                                    (peer == left ? " (left neighbour: its data did not arrive)"
                                                  : " (right neighbour: it did not take our data)"),
                                links_->PeerId(peer));
      }
    }
    links_->EndRound(false);
  }

  std::unique_ptr<RingLinks> links_;
  size_t segment_;  // floats
  int rank_ = 0, size_ = 1;
  std::vector<float> recv_;
  Clock::time_point start_;  // of the Sum in progress, with its timeout
  Clock::duration timeout_{};
};

class MpiAllreduce : public Allreduce {
 public:
  explicit MpiAllreduce(MPI_Comm comm) : comm_(comm) { MPI_Comm_rank(comm_, &rank_); }
  std::string name() const override { return "mpi"; }

  void Sum(float* data, size_t n, double timeout_s) override {
    const auto start = Clock::now();
    const auto timeout =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_, &request);
    int done = 0;
    for (int polls = 1; !done; ++polls) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done || polls % 256 != 0) continue;  // the clock and the abort check are not free
      // As the ring's wait: after a burst of tests, pause between them (the backoff) so that a
      // waiting rank gives its core back to training instead of spinning.
      if (polls >= 4096) std::this_thread::sleep_for(std::chrono::microseconds(20));
      if (ShouldAbort()) {
        throw CollectiveAborted("MPI_Allreduce on rank " + std::to_string(rank_) +
                                " abandoned: the job is stopping");
      }
      if (PastDeadline(start, timeout)) {
        throw CollectiveTimeout("MPI_Allreduce on rank " + std::to_string(rank_) +
                                    " did not complete within the timeout (a peer is missing)",
                                -1);
      }
    }
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
};

}  // namespace

std::unique_ptr<Allreduce> MakeRingAllreduce(std::unique_ptr<RingLinks> links,
                                             size_t segment_bytes) {
  return std::make_unique<RingAllreduce>(std::move(links), segment_bytes);
}

std::unique_ptr<Allreduce> MakeRingAllreduce(MPI_Comm comm, size_t segment_bytes) {
  return MakeRingAllreduce(MakeMpiLinks(comm), segment_bytes);
}

std::unique_ptr<Allreduce> MakeMpiAllreduce(MPI_Comm comm) {
  return std::make_unique<MpiAllreduce>(comm);
}

std::unique_ptr<Allreduce> MakeAllreduce(const std::string& kind, MPI_Comm comm) {
  if (kind == "ring") return MakeRingAllreduce(comm);
  if (kind == "mpi") return MakeMpiAllreduce(comm);
  throw std::invalid_argument("--allreduce must be ring or mpi, not '" + kind + "'");
}

}  // namespace tteps::collectives
