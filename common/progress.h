// One progress line on stderr at most every `interval_s` seconds (epoch, step, loss, trips/s, ETA).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tteps {

class ProgressLine {
 public:
  ProgressLine(std::string label, int64_t total_steps, double interval_s);
  // Prints if the interval has passed (or `force`).
  void Update(int64_t epoch, int64_t step, double loss, double trips_per_s, bool force = false);
  // The latest evaluation's MAPE, shown from the next line on.
  void set_eval_mape(double mape) { eval_mape_ = mape; }

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  int64_t total_steps_;
  double interval_s_;
  Clock::time_point start_, last_;
  double eval_mape_ = -1;  // none yet
};

// "1h02m", "3m07s", "12s"
std::string FormatDuration(double seconds);

}  // namespace tteps
