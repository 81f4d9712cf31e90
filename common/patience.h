// --patience N: training stops after N evaluations in a row without a lower MAPE than the best
// so far (early stopping). The same rule for the scheduler's evaluations and the local trainer's.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace tteps {

class Patience {
 public:
  explicit Patience(int64_t evaluations) : patience_(evaluations) {}
  // One evaluation's MAPE; true once `evaluations` in a row have not improved on the best
  // (never with patience 0). A non-finite MAPE never improves.
  bool Offer(double mape) {
    if (std::isfinite(mape) && mape < best_) {
      best_ = mape;
      misses_ = 0;
    } else {
      ++misses_;
    }
    return patience_ > 0 && misses_ >= patience_;
  }
  int64_t misses() const { return misses_; }
  double best() const { return best_; }

 private:
  int64_t patience_;
  int64_t misses_ = 0;
  double best_ = std::numeric_limits<double>::infinity();
};

}  // namespace tteps
