// The slices of the global batch a worker computes, as one object: its own stream and, in sync
// mode after a worker loss, the lost workers' slices it adopted (each from its own stream by
// its owner's accumulation schedule, so that it draws what its owner would have) until a joiner
// takes them over. The data order never depends on who computes a slice.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/job_config.h"
#include "common/slice_schedule.h"
#include "model/data/trips.h"
#include "model/row_spans.h"
#include "worker/slice_stream.h"

namespace tteps {

// A step's share of one slice's data: its micro-batches, the embedding rows they use (for a
// sparse exchange), and where the stream stood after them.
struct StepData {
  std::vector<std::vector<size_t>> slices;
  TableRows rows;
  int64_t trips = 0;
  int64_t epoch = 0;        // the epoch of the last micro-batch
  int64_t epochs_done = 0;  // epochs finished by these micro-batches
};

// `accumulation` micro-batches from `stream`; `rows_of`: the training data, when the exchange
// wants the rows (else null).
StepData Draw(SliceStream& stream, int64_t accumulation, const data::Trips* rows_of);

// How the global batch is cut into slices (common to every slice of a job).
struct SlicingRule {
  int num_workers = 1;
  int64_t first_worker_batch = -1;
  bool balanced = false;
};

struct AdoptedSlice {
  int slice;
  SliceStream stream;
  SliceSchedule schedule;
  StepData next;  // its data for the step it is computed in next
};

class StepSlices {
 public:
  StepSlices(const data::Trips& train, const TrainConfig& opts, SlicingRule rule, int own_slice);
  SliceStream& own() { return own_; }
  // Computes `slice` too from step `step` on, by `schedule`; false if it does already.
  bool Adopt(int slice, int64_t step, SliceSchedule schedule);
  // Leaves `slice` (a joiner computes it from now on).
  void Release(int slice);
  const std::vector<std::unique_ptr<AdoptedSlice>>& adopted() const { return adopted_; }
  // After a computed step: the adopted slice's data for step `step`.
  void DrawNext(AdoptedSlice& a, int64_t step);
  // Every micro-batch the next step computes: `own`'s and the adopted slices'.
  std::vector<std::vector<size_t>> NextMicroBatches(const StepData& own) const;

 private:
  const data::Trips& train_;
  const TrainConfig& opts_;
  SlicingRule rule_;
  SliceStream own_;
  std::vector<std::unique_ptr<AdoptedSlice>> adopted_;
};

}  // namespace tteps
