#include "scheduler/slice_schedules.h"

#include <glog/logging.h>

#include <filesystem>

#include "common/atomic_file.h"

namespace tteps::scheduler {

SliceSchedules::SliceSchedules(int slices, int64_t accumulation, OutputConfig output)
    : slices_(slices), accumulation_(accumulation), output_(std::move(output)) {}

void SliceSchedules::Add(int slice, const AccumulationChange& change) {
  const auto it = schedules_.try_emplace(slice, accumulation_).first;
  it->second.Add(change);
  Keep();
}

int64_t SliceSchedules::LastAccumulationOf(int slice) const {
  const auto kept = schedules_.find(slice);
  return kept != schedules_.end() ? kept->second.changes().back().accumulation : accumulation_;
}

std::string SliceSchedules::Text(int slice) const {
  const auto it = schedules_.find(slice);
  return it != schedules_.end() ? it->second.Encode() : SliceSchedule(accumulation_).Encode();
}

std::vector<std::string> SliceSchedules::Encoded() const {
  if (schedules_.empty()) return {};
  std::vector<std::string> out(slices_);
  for (const auto& [slice, schedule] : schedules_) {
    if (slice >= 0 && slice < slices_) out[slice] = schedule.Encode();
  }
  return out;
}

void SliceSchedules::Keep() const {
  if (output_.checkpoint_every <= 0) return;
  const std::string path = output_.checkpoint_dir + "/" + kSchedulesFile;
  try {
    std::filesystem::create_directories(output_.checkpoint_dir);
    WriteFileAtomically(path, FormatSchedules(schedules_));
  } catch (const std::exception& e) {
    LOG(ERROR) << "could not keep the accumulation schedules in " << path << ": " << e.what();
  }
}

}  // namespace tteps::scheduler
