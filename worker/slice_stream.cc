#include "worker/slice_stream.h"

#include "worker/batch_slicer.h"
#include "worker/data/batcher.h"

namespace tteps {

SliceStream::SliceStream(const data::Trips& trips, const TrainConfig& opts, int num_workers,
                         int worker, int64_t first_worker_batch, bool balanced)
    : batch_size_(opts.batch_size),
      seed_(opts.seed),
      num_workers_(num_workers),
      worker_(worker),
      first_worker_batch_(first_worker_batch),
      balanced_(balanced) {
  lengths_.reserve(trips.size());
  for (size_t i = 0; i < trips.size(); ++i) lengths_.push_back(trips.length(i));
}

std::vector<size_t> SliceStream::Next() {
  if (next_ == batches_.size()) {
    batches_ = data::EpochBatches(lengths_, batch_size_, seed_, ++epoch_);
    next_ = 0;
  }
  return SliceFor(batches_[next_++], num_workers_, worker_, first_worker_batch_,
                  balanced_ ? &lengths_ : nullptr);
}

}  // namespace tteps
