#include "common/slice_schedule.h"

#include <algorithm>
#include <climits>
#include <sstream>
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

std::string FormatSchedules(const std::map<int, SliceSchedule>& schedules) {
  std::string out = "# slice step position accumulation\n";
  for (const auto& [slice, schedule] : schedules) {
    for (const AccumulationChange& c : schedule.changes()) {
      out += std::to_string(slice) + " " + std::to_string(c.step) + " " +
             std::to_string(c.position) + " " + std::to_string(c.accumulation) + "\n";
    }
  }
  return out;
}

std::map<int, SliceSchedule> ParseSchedules(const std::string& text, const std::string& file) {
  std::map<int, SliceSchedule> out;
  std::istringstream in(text);
  std::string line;
  static const char* const kFields[] = {"slice", "step", "position", "accumulation"};
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    const std::string where = file + ":" + std::to_string(n) + ": ";
    std::istringstream fields(line);
    int64_t v[4];
    for (int i = 0; i < 4; ++i) {
      if (!(fields >> v[i])) {
        throw std::invalid_argument(where + "field " + kFields[i] + " is missing or not a number");
      }
    }
    std::string extra;
    if (fields >> extra) throw std::invalid_argument(where + "more than 4 fields");
    if (v[0] < 0 || v[0] > INT32_MAX) throw std::invalid_argument(where + "field slice < 0");
    const int slice = static_cast<int>(v[0]);
    const auto it = out.find(slice);
    if (it != out.end() && v[1] <= it->second.changes().back().step) {
      throw std::invalid_argument(where + "field step does not follow the slice's line before");
    }
    try {
      if (it == out.end()) {
        if (v[1] != 0) throw std::invalid_argument("a slice's first change must be at step 0");
        out.emplace(slice, SliceSchedule(v[3]));
        out.at(slice).Add({v[1], v[2], v[3]});
      } else {
        it->second.Add({v[1], v[2], v[3]});
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + e.what());
    }
  }
  return out;
}

}  // namespace tteps
