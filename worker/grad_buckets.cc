#include "worker/grad_buckets.h"

namespace tteps {

std::vector<Bucket> PlanBuckets(const ParamLayout& layout, double cap_bytes) {
  const auto& entries = layout.entries();
  std::vector<Bucket> buckets;
  double bytes = 0;
  for (int e = static_cast<int>(entries.size()) - 1; e >= 0; --e) {
    if (buckets.empty() || (cap_bytes > 0 && bytes >= cap_bytes)) {
      Bucket b;
      b.end = entries[e].offset + entries[e].numel;
      b.last_entry = e;
      buckets.push_back(b);
      bytes = 0;
    }
    Bucket& b = buckets.back();
    b.first_entry = e;
    b.begin = entries[e].offset;
    bytes += static_cast<double>(entries[e].numel) * sizeof(float);
  }
  return buckets;
}

BucketTracker::BucketTracker(std::vector<Bucket> buckets, int num_entries)
    : buckets_(std::move(buckets)), bucket_of_(num_entries, -1) {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (int e = buckets_[b].first_entry; e <= buckets_[b].last_entry; ++e) bucket_of_[e] = b;
  }
  Reset();
}

void BucketTracker::Reset() {
  ready_.assign(bucket_of_.size(), false);
  missing_.clear();
  for (const auto& b : buckets_) missing_.push_back(b.last_entry - b.first_entry + 1);
  next_release_ = 0;
}

std::vector<int> BucketTracker::MarkReady(int entry) {
  if (!ready_[entry]) {
    ready_[entry] = true;
    --missing_[bucket_of_[entry]];
  }
  return Release();
}

std::vector<int> BucketTracker::Release() {
  std::vector<int> out;
  while (next_release_ < static_cast<int>(buckets_.size()) && missing_[next_release_] == 0) {
    out.push_back(next_release_++);
  }
  return out;
}

}  // namespace tteps
