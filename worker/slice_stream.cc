#include "worker/slice_stream.h"

#include "model/data/batcher.h"
#include "worker/batch_slicer.h"

namespace tteps {

SliceStream::SliceStream(const data::Trips& trips, const TrainConfig& opts, int num_workers,
                         int worker, int64_t first_worker_batch, bool balanced)
    : batch_size_(opts.batch_size),
      seed_(opts.seed),
      num_workers_(num_workers),
      worker_(worker),
      first_worker_batch_(first_worker_batch),
      balanced_(balanced),
      window_(static_cast<size_t>(opts.shuffle_window)),
      trips_(trips) {
  trips_.ExpectAccess(window_ == 0 || window_ >= trips_.size());
}

std::vector<size_t> SliceStream::Next() {
  // The trips object outlives the stream, which may move (a lost worker's adopted stream).
  const data::TripLength length = [&trips = trips_](size_t i) { return trips.length(i); };
  if (!order_ || next_ == order_->num_batches()) {
    order_ = std::make_unique<data::EpochOrder>(trips_.size(), length, batch_size_, seed_, ++epoch_,
                                                window_);
    next_ = 0;
  }
  return SliceFor(order_->Batch(next_++), num_workers_, worker_, first_worker_batch_,
                  balanced_ ? length : data::TripLength());
}

}  // namespace tteps
