// The accumulation each slice of the global batch drew over the job (common/slice_schedule.h),
// as its workers applied the changes: what an adopter or a joiner of a slice is sent, what every
// map carries (resume, rollback), and the file beside the checkpoints that a later --resume
// reads. Slices without a change draw the job's --accumulation.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/job_config.h"
#include "common/slice_schedule.h"

namespace tteps::scheduler {

class SliceSchedules {
 public:
  SliceSchedules(int slices, int64_t accumulation, OutputConfig output);
  // Resuming: the schedules kept beside the checkpoints.
  void Restore(std::map<int, SliceSchedule> kept) { schedules_ = std::move(kept); }
  // A change as slice `slice`'s worker applied it, then kept beside the checkpoints. Throws
  // std::invalid_argument for one before the slice's last.
  void Add(int slice, const AccumulationChange& change);
  // The accumulation the slice drew last.
  int64_t LastAccumulationOf(int slice) const;
  // What an adopter or a joiner of the slice is sent (SliceSchedule::Encode).
  std::string Text(int slice) const;
  // Every slice's, as a map carries them (empty: none changed).
  std::vector<std::string> Encoded() const;
  // Writes them beside the checkpoints (with --checkpoint_every); a failure is logged, not
  // thrown: the job goes on, a resume would draw as if nothing changed.
  void Keep() const;

 private:
  int slices_;
  int64_t accumulation_;
  OutputConfig output_;
  std::map<int, SliceSchedule> schedules_;  // slice -> its accumulations, once one changed
};

}  // namespace tteps::scheduler
