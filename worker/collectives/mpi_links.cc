#include "worker/collectives/mpi_links.h"

#include <string>
#include <utility>
#include <vector>

namespace tteps::collectives {
namespace {

constexpr int kTag = 0x7e57;

class MpiLinks : public RingLinks {
 public:
  explicit MpiLinks(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void PostSend(const float* data, size_t n) override {
    Post(false, sends_++);
    MPI_Isend(data, static_cast<int>(n), MPI_FLOAT, (rank_ + 1) % size_, kTag, comm_,
              &requests_.back());
  }
  void PostRecv(float* into, size_t n) override {
    Post(true, recvs_++);
    MPI_Irecv(into, static_cast<int>(n), MPI_FLOAT, (rank_ + size_ - 1) % size_, kTag, comm_,
              &requests_.back());
  }

  std::optional<LinkEvent> Poll() override {
    if (requests_.empty()) return std::nullopt;
    int index = MPI_UNDEFINED, done = 0;
    MPI_Testany(static_cast<int>(requests_.size()), requests_.data(), &index, &done,
                MPI_STATUS_IGNORE);
    if (!done || index == MPI_UNDEFINED) return std::nullopt;
    return events_[index];
  }

  void EndRound(bool abandon) override {
    if (abandon) {
      // MPI must write no more into buffers the caller is about to give up.
      for (auto& r : requests_) {
        if (r == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
    }
    requests_.clear();
    events_.clear();
    sends_ = recvs_ = 0;
  }

 private:
  void Post(bool recv, size_t index) {
    requests_.push_back(MPI_REQUEST_NULL);
    events_.push_back({recv, index});
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> requests_;
  std::vector<LinkEvent> events_;  // what each request is
  size_t sends_ = 0, recvs_ = 0;
};

}  // namespace

std::unique_ptr<RingLinks> MakeMpiLinks(MPI_Comm comm) { return std::make_unique<MpiLinks>(comm); }

}  // namespace tteps::collectives
