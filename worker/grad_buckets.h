// Gradient buckets of the ring backend, as in PyTorch DDP: the flat gradient (ParamLayout
// order) is cut into contiguous buckets of whole tensors of about `cap_bytes`, starting from the
// LAST tensor, because backward produces gradients roughly in reverse order of registration:
// bucket 0 is ready first. A bucket's allreduce may start as soon as all its tensors' gradients
// are in, while backward computes the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "model/param_layout.h"

namespace tteps {

struct Bucket {
  int64_t begin = 0, end = 0;           // flat float range [begin, end)
  int first_entry = 0, last_entry = 0;  // layout entries first_entry..last_entry (inclusive)
};

// Buckets in the order they are reduced. A tensor larger than the cap is a bucket of its own;
// cap_bytes <= 0 puts everything in one bucket.
std::vector<Bucket> PlanBuckets(const ParamLayout& layout, double cap_bytes);

// Which buckets may be reduced: tensors are marked as their gradients arrive, and buckets are
// released strictly in index order (every worker must reduce them in the same order, whatever
// order its backward happens to produce gradients in).
class BucketTracker {
 public:
  BucketTracker(std::vector<Bucket> buckets, int num_entries);
  // Starts a step: nothing is ready.
  void Reset();
  // Marks layout entry `entry` ready; returns the buckets released by it, in order.
  std::vector<int> MarkReady(int entry);
  bool IsReady(int entry) const { return ready_[entry]; }
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  std::vector<int> Release();

  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;  // entry -> bucket
  std::vector<bool> ready_;
  std::vector<int> missing_;  // per bucket: entries not ready yet
  int next_release_ = 0;
};

}  // namespace tteps
