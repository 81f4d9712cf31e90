#include "common/slice_schedule.h"

#include <algorithm>
#include <stdexcept>

#include "common/cereal_body.h"
#include "common/codec.h"

namespace tteps {

SliceSchedule::SliceSchedule(int64_t accumulation) {
  if (accumulation < 1) throw std::invalid_argument("a slice's accumulation must be >= 1");
  changes_.push_back({0, 0, accumulation});
}

void SliceSchedule::Add(const AccumulationChange& c) {
  if (c.step < 0 || c.position < 0 || c.accumulation < 1) {
    throw std::invalid_argument(
        "an accumulation change needs step >= 0, position >= 0 and "
        "accumulation >= 1");
  }
  while (!changes_.empty() && changes_.back().step >= c.step) changes_.pop_back();
  changes_.push_back(c);
  if (changes_.front().step != 0) changes_.insert(changes_.begin(), {0, 0, c.accumulation});
}

const AccumulationChange& SliceSchedule::At(int64_t step) const {
  // The last change at or before `step` (the first one is at step 0).
  auto it = std::upper_bound(changes_.begin(), changes_.end(), step,
                             [](int64_t s, const AccumulationChange& c) { return s < c.step; });
  return it == changes_.begin() ? changes_.front() : *std::prev(it);
}

int64_t SliceSchedule::PositionAt(int64_t step) const {
  const AccumulationChange& c = At(step);
  return c.position + (step - c.step) * c.accumulation;
}

int64_t SliceSchedule::AccumulationAt(int64_t step) const { return At(step).accumulation; }

std::string SliceSchedule::Encode() const { return EncodeCereal(changes_); }

SliceSchedule SliceSchedule::Decode(const std::string& text) {
  const auto changes = DecodeCereal<std::vector<AccumulationChange>>(text);
  if (changes.empty() || changes.front().step != 0) {
    throw CodecError("a slice schedule must start at step 0");
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    const AccumulationChange& c = changes[i];
    // Positions need not grow: a rollback restarts a stream where its checkpoint says.
    if (c.position < 0 || c.accumulation < 1 || (i > 0 && c.step <= changes[i - 1].step)) {
      throw CodecError("a slice schedule's changes must follow each other (change " +
                       std::to_string(i) + ")");
    }
  }
  SliceSchedule s;
  s.changes_ = changes;
  return s;
}

}  // namespace tteps
