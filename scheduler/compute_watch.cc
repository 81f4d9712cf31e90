#include "scheduler/compute_watch.h"

namespace tteps::scheduler {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void ComputeWatch::Heard(int worker, int64_t step, Clock::time_point now) {
  if (step < 0) {
    computing_.erase(worker);
    return;
  }
  const auto it = computing_.find(worker);
  // From the first heartbeat that names the step: up to one heartbeat interval late.
  if (it == computing_.end() || it->second.step != step) computing_[worker] = {step, now, now};
}

std::vector<int32_t> ComputeWatch::Computing() const {
  std::vector<int32_t> out;
  for (const auto& [w, busy] : computing_) out.push_back(w);
  return out;
}

std::vector<ComputeWatch::LongStep> ComputeWatch::TakeLong(Clock::time_point now) {
  std::vector<LongStep> out;
  for (auto& [w, busy] : computing_) {
    if (Seconds(now - busy.named) < name_after_s_) continue;
    busy.named = now;
    out.push_back({w, busy.step, Seconds(now - busy.since)});
  }
  return out;
}

std::optional<ComputeWatch::LongStep> ComputeWatch::OverLimit(Clock::time_point now) const {
  if (limit_s_ <= 0) return std::nullopt;
  for (const auto& [w, busy] : computing_) {
    if (Seconds(now - busy.since) > limit_s_)
      return LongStep{w, busy.step, Seconds(now - busy.since)};
  }
  return std::nullopt;
}

}  // namespace tteps::scheduler
