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

namespace {

// Parts from the front, each as long as its cost stays within `limit` (and leaves a trip for
// each later worker when `keep_one`); returns the sizes, or fewer than needed when `limit` is
// too small (the sizes then do not cover the batch).
std::vector<int64_t> Fill(const std::vector<int64_t>& lengths, int workers, int64_t limit,
                          bool keep_one) {
  const auto n = static_cast<int64_t>(lengths.size());
  std::vector<int64_t> sizes;
  int64_t at = 0;
  for (int w = 0; w < workers && at < n; ++w) {
    const int64_t cap = keep_one ? n - at - (workers - w - 1) : n - at;
    int64_t take = 0, longest = 0;
    while (take < cap) {
      const int64_t l = std::max(longest, lengths[at + take]);
      if (l * (take + 1 + kSliceOverhead) > limit) break;
      longest = l;
      ++take;
    }
    sizes.push_back(take);
    at += take;
  }
  sizes.resize(workers, 0);
  return sizes;
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

}  // namespace

std::vector<int64_t> BalancedSliceSizes(const std::vector<int64_t>& lengths, int workers) {
  if (workers < 1) throw std::invalid_argument("slicing over < 1 worker");
  const auto n = static_cast<int64_t>(lengths.size());
  int64_t longest = 0;
  for (int64_t l : lengths) longest = std::max(longest, std::max<int64_t>(l, 1));
  // The smallest limit at which the parts cover the batch (binary search; costs are integers).
  int64_t lo = 0, hi = longest * (n + kSliceOverhead);
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (Sum(Fill(lengths, workers, mid, false)) == n) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  std::vector<int64_t> sizes = Fill(lengths, workers, hi, n >= workers);
  if (Sum(sizes) != n) throw std::logic_error("balanced slicing did not cover the batch");
  return sizes;
}

std::vector<size_t> SliceFor(const std::vector<size_t>& batch, int workers, int worker,
                             int64_t first_worker_batch, const data::TripLength& trip_length) {
  if (worker < 0 || worker >= workers) {
    throw std::out_of_range("worker " + std::to_string(worker) + " of " + std::to_string(workers));
  }
  std::vector<int64_t> sizes;
  if (trip_length && first_worker_batch < 0) {
    std::vector<int64_t> lengths;
    for (size_t i : batch) lengths.push_back(static_cast<int64_t>(trip_length(i)));
    sizes = BalancedSliceSizes(lengths, workers);
  } else {
    sizes = SliceSizes(static_cast<int64_t>(batch.size()), workers, first_worker_batch);
  }
  int64_t begin = 0;
  for (int w = 0; w < worker; ++w) begin += sizes[w];
  return {batch.begin() + begin, batch.begin() + begin + sizes.at(worker)};
}

}  // namespace tteps
