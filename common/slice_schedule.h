// Where a slice's data stream stands at any step when its accumulation changes during the job
// (an accumulation policy): the micro-batches a slice draws per step, and from which step, as
// its worker applied them. A lost worker's slice is computed on by another worker from the step
// that worker is in, which may be the interrupted one: it must draw exactly the micro-batches
// the lost worker would have (no trip skipped, none twice), so it needs the whole schedule, not
// only the last accumulation. Role-free: the worker reports each change, the scheduler keeps a
// schedule per slice and hands it to the adopter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tteps {

struct AccumulationChange {
  int64_t step = 0;          // the first step drawn with it
  int64_t position = 0;      // micro-batches the slice's stream had drawn before that step
  int64_t accumulation = 1;  // micro-batches per step from then on

  template <class Archive>
  void serialize(Archive& ar) {
    ar(step, position, accumulation);
  }
};

class SliceSchedule {
 public:
  // A slice that draws `accumulation` micro-batches every step from step 0.
  explicit SliceSchedule(int64_t accumulation = 1);

  // Adds a change (step and position >= 0, accumulation >= 1, else std::invalid_argument).
  // One at or before the last change's step replaces the changes from its step on: a driver
  // restarted from a checkpoint (a rollback) draws those steps again.
  void Add(const AccumulationChange& c);
  int64_t PositionAt(int64_t step) const;      // micro-batches drawn before `step`
  int64_t AccumulationAt(int64_t step) const;  // micro-batches of `step`
  const std::vector<AccumulationChange>& changes() const { return changes_; }

  std::string Encode() const;
  // Throws CodecError (common/codec.h) if `text` is not a valid schedule.
  static SliceSchedule Decode(const std::string& text);

 private:
  const AccumulationChange& At(int64_t step) const;
  std::vector<AccumulationChange> changes_;  // by step; the first at step 0
};

// The schedules of a job's slices, kept beside its checkpoints so that a resumed job positions
// every slice's stream where the undisturbed job had it (--resume). Text, one change a line:
// "slice step position accumulation", after a comment line.
std::string FormatSchedules(const std::map<int, SliceSchedule>& schedules);
// Throws std::invalid_argument naming `file`, the line and the field of a malformed line.
std::map<int, SliceSchedule> ParseSchedules(const std::string& text, const std::string& file);
inline constexpr char kSchedulesFile[] = "accumulation_schedules.txt";

}  // namespace tteps
