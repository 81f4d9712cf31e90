#include "scheduler/speed_meter.h"

#include <algorithm>

namespace tteps::scheduler {

bool SpeedMeter::Observe(size_t slice, const ppo::WindowReport& r, int64_t alpha) {
  if (slice >= seconds_.size() || alpha < 1) return false;
  double compute = 0;
  if (!r.step_compute_s.empty() && r.step_compute_s.size() == r.step_alpha.size()) {
    if (r.step_alpha.back() != alpha) return false;
    compute = r.step_compute_s.back();
  } else if (r.alpha == alpha) {
    compute = r.compute_s;
  }
  if (compute <= 0) return false;
  seconds_[slice] = compute / static_cast<double>(alpha + std::max<int64_t>(0, r.extra));
  fresh_[slice] = true;
  return true;
}

}  // namespace tteps::scheduler
