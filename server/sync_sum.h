// A sync step's aggregate on one shard: the workers' pushes summed in worker order, whatever
// order they arrive in (float addition is not associative, so the aggregate does not depend on
// the network), a push's parts kept until it is complete.
#pragma once

#include <cstdint>
#include <vector>

#include "common/adascale.h"
#include "common/key_range.h"

namespace tteps::server {

class SyncSum {
 public:
  SyncSum(KeyRange range, int num_workers);
  // Adds `worker`'s push of `samples` trips (`spans` say which keys `grad_sum` holds), or a part
  // of it (`more`: the rest follows). Throws std::invalid_argument for a second push of the
  // step. Returns true once every worker's push is in.
  bool Add(int worker, int64_t samples, const std::vector<KeyRange>& spans, const float* grad_sum,
           bool more, PieceNoise noise);
  // Whether `worker`'s push of this step is complete.
  bool pushed(int worker) const { return pushed_[worker]; }
  // A lost worker's parts of a push it did not complete (its slice comes again from another).
  void DropParts(int worker);
  // The step's sum (every push in), its trips, and its pieces' noise summed in worker order.
  const float* sum() const { return sum_.data(); }
  int64_t samples() const { return samples_; }
  PieceNoise noise() const;
  // Zero again, for the next step.
  void Reset();

 private:
  // A push (or part) that arrived before a lower worker's push, kept until its turn.
  struct HeldPush {
    std::vector<KeyRange> spans;
    std::vector<float> values;
  };
  // Sums the held parts of the workers whose turn it is, in order, while their pushes are
  // complete.
  void SumHeld();

  KeyRange range_;
  std::vector<float> sum_;  // zero outside a step's pushes
  int64_t samples_ = 0;
  std::vector<bool> pushed_;
  std::vector<std::vector<HeldPush>> held_;  // by worker, in arrival order
  std::vector<PieceNoise> noise_;            // AdaScale: the pieces of each worker's slice
  int pushes_ = 0;
  int next_summed_ = 0;  // the worker whose push is summed next
};

}  // namespace tteps::server
