#include "worker/batch_slicer.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tteps {

std::vector<int64_t> SliceSizes(int64_t batch, int workers, int64_t first_worker_batch) {
  if (workers < 1) throw std::invalid_argument("slicing over < 1 worker");
  std::vector<int64_t> sizes(workers, 0);
  // Even split: remainder spread one by one from worker 0. With b0 set, worker 0 takes b0 (or
  // the whole batch if smaller) and the others share the rest the same way, from worker 1.
  int first_shared = 0;
  int64_t rest = batch;
  if (first_worker_batch >= 0 && workers > 1) {
    sizes[0] = std::min(first_worker_batch, batch);
    rest -= sizes[0];
    first_shared = 1;
  }
  const int sharing = workers - first_shared;
  for (int w = first_shared; w < workers; ++w) {
    sizes[w] = rest / sharing + ((w - first_shared) < rest % sharing ? 1 : 0);
  }
  return sizes;
}

std::vector<size_t> SliceFor(const std::vector<size_t>& batch, int workers, int worker,
                             int64_t first_worker_batch) {
  if (worker < 0 || worker >= workers) {
    throw std::out_of_range("worker " + std::to_string(worker) + " of " + std::to_string(workers));
  }
  const auto sizes = SliceSizes(static_cast<int64_t>(batch.size()), workers, first_worker_batch);
  int64_t begin = 0;
  for (int w = 0; w < worker; ++w) begin += sizes[w];
  return {batch.begin() + begin, batch.begin() + begin + sizes.at(worker)};
}

}  // namespace tteps
