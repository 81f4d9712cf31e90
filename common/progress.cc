#include "common/progress.h"

#include <algorithm>
#include <cstdio>

namespace tteps {

ProgressLine::ProgressLine(std::string label, int64_t total_steps, double interval_s)
    : label_(std::move(label)),
      total_steps_(total_steps),
      interval_s_(interval_s),
      start_(Clock::now()),
      last_(start_) {}

void ProgressLine::Update(int64_t epoch, int64_t step, double loss, double trips_per_s,
                          bool force) {
  const auto now = Clock::now();
  if (!force && std::chrono::duration<double>(now - last_).count() < interval_s_) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string eta = "?";
  if (step > 0 && total_steps_ > 0) {
    eta = FormatDuration(elapsed / step * std::max<int64_t>(0, total_steps_ - step));
  }
  char eval[32] = "";
  if (eval_mape_ >= 0) std::snprintf(eval, sizeof eval, " eval MAPE %.4f", eval_mape_);
  std::fprintf(stderr,
               "[%s] step %lld/%lld epoch %lld loss %.4f %.1f trips/s%s elapsed %s ETA %s\n",
               label_.c_str(), static_cast<long long>(step), static_cast<long long>(total_steps_),
               static_cast<long long>(epoch), loss, trips_per_s, eval,
               FormatDuration(elapsed).c_str(), eta.c_str());
  std::fflush(stderr);
}

std::string FormatDuration(double seconds) {
  const long long s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%llds", s);
  }
  return buf;
}

}  // namespace tteps
