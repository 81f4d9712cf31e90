// A worker's slices of the global batches, epoch after epoch. Every worker walks the same
// seeded global order, so with equal accumulation the slices of one epoch are disjoint and
// cover it (the same batches a local run with the same --batch_size and --seed takes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/job_config.h"
#include "model/data/batcher.h"
#include "model/data/trips.h"

namespace tteps {

class SliceStream {
 public:
  SliceStream(const data::Trips& trips, const TrainConfig& opts, int num_workers, int worker,
              int64_t first_worker_batch, bool balanced = false);
  // Indices of this worker's part of the next global batch.
  std::vector<size_t> Next();
  // The epoch of the last slice returned (-1 before the first).
  int64_t epoch() const { return epoch_; }
  // Epochs finished by the slices taken so far (the last one's once it is complete).
  int64_t EpochsDone() const {
    const bool at_end = epoch_ >= 0 && next_ == order_->num_batches();
    return at_end ? epoch_ + 1 : (epoch_ > 0 ? epoch_ : 0);
  }

 private:
  int64_t batch_size_;
  uint64_t seed_;
  int num_workers_, worker_;
  int64_t first_worker_batch_;
  bool balanced_;
  size_t window_;
  const data::Trips& trips_;
  std::unique_ptr<data::EpochOrder> order_;
  size_t next_ = 0;
  int64_t epoch_ = -1;
};

}  // namespace tteps
