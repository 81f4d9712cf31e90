#include "server/sync_sum.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tteps::server {

SyncSum::SyncSum(KeyRange range, int num_workers)
    : range_(range),
      sum_(static_cast<size_t>(range.size()), 0.f),
      pushed_(num_workers, false),
      held_(num_workers),
      noise_(num_workers) {}

bool SyncSum::Add(int worker, int64_t samples, const std::vector<KeyRange>& spans,
                  const float* grad_sum, bool more, PieceNoise noise) {
  if (pushed_[worker]) {
    throw std::invalid_argument("second push of worker " + std::to_string(worker));
  }
  // A push (or part) ahead of its turn, or a part of the push whose turn it is, waits, copied,
  // for the ones before it and the rest of it.
  if (worker == next_summed_ && !more) {
    AddSpans(grad_sum, spans, range_.begin, sum_.data());
  } else {
    held_[worker].push_back(
        HeldPush{spans, std::vector<float>(grad_sum, grad_sum + SpanKeys(spans))});
  }
  if (more) return false;
  ++pushes_;
  pushed_[worker] = true;
  noise_[worker] = noise;
  samples_ += samples;
  SumHeld();
  return pushes_ == static_cast<int>(pushed_.size());
}

void SyncSum::SumHeld() {
  // A push is summed only once complete, so that the parts of a worker lost in the middle of
  // its push can be dropped (DropParts) and its slice pushed again by another worker.
  const int workers = static_cast<int>(pushed_.size());
  while (next_summed_ < workers && pushed_[next_summed_]) {
    for (const HeldPush& h : held_[next_summed_]) {
      AddSpans(h.values.data(), h.spans, range_.begin, sum_.data());
    }
    held_[next_summed_].clear();
    ++next_summed_;
  }
}

void SyncSum::DropParts(int worker) {
  if (!pushed_[worker]) held_[worker].clear();
}

PieceNoise SyncSum::noise() const {
  PieceNoise total;
  for (const PieceNoise& p : noise_) {  // in worker order: replicas add alike
    total.sq += p.sq;
    total.n2 += p.n2;
  }
  return total;
}

void SyncSum::Reset() {
  std::fill(pushed_.begin(), pushed_.end(), false);
  std::fill(sum_.begin(), sum_.end(), 0.f);
  samples_ = 0;
  pushes_ = 0;
  next_summed_ = 0;
}

}  // namespace tteps::server
