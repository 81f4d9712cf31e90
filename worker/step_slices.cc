#include "worker/step_slices.h"

#include <algorithm>

#include "model/deeptte/embedding_rows.h"

namespace tteps {

StepData Draw(SliceStream& stream, int64_t accumulation, const data::Trips* rows_of) {
  StepData d;
  d.slices.resize(accumulation);
  for (auto& s : d.slices) {
    s = stream.Next();
    d.trips += static_cast<int64_t>(s.size());
  }
  if (rows_of) d.rows = deeptte::EmbeddingRows(*rows_of, d.slices);
  d.epoch = stream.epoch();
  d.epochs_done = stream.EpochsDone();
  return d;
}

StepSlices::StepSlices(const data::Trips& train, const TrainConfig& opts, SlicingRule rule,
                       int own_slice)
    : train_(train),
      opts_(opts),
      rule_(rule),
      own_(train, opts, rule.num_workers, own_slice, rule.first_worker_batch, rule.balanced) {}

bool StepSlices::Adopt(int slice, int64_t step, SliceSchedule schedule) {
  if (std::any_of(adopted_.begin(), adopted_.end(),
                  [slice](const auto& a) { return a->slice == slice; })) {
    return false;
  }
  auto a = std::make_unique<AdoptedSlice>(
      AdoptedSlice{slice,
                   SliceStream(train_, opts_, rule_.num_workers, slice, rule_.first_worker_batch,
                               rule_.balanced),
                   std::move(schedule), StepData{}});
  for (int64_t i = 0, n = a->schedule.PositionAt(step); i < n; ++i) a->stream.Next();
  a->next = Draw(a->stream, a->schedule.AccumulationAt(step), nullptr);
  adopted_.push_back(std::move(a));
  return true;
}

void StepSlices::Release(int slice) {
  adopted_.erase(std::remove_if(adopted_.begin(), adopted_.end(),
                                [slice](const auto& a) { return a->slice == slice; }),
                 adopted_.end());
}

void StepSlices::DrawNext(AdoptedSlice& a, int64_t step) {
  a.next = Draw(a.stream, a.schedule.AccumulationAt(step), nullptr);
}

std::vector<std::vector<size_t>> StepSlices::NextMicroBatches(const StepData& own) const {
  std::vector<std::vector<size_t>> all = own.slices;
  for (const auto& a : adopted_)
    all.insert(all.end(), a->next.slices.begin(), a->next.slices.end());
  return all;
}

}  // namespace tteps
