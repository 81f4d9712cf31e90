#include "scheduler/goodput_policy.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "common/gradient_noise.h"
#include "scheduler/speed_shares.h"
#include "scheduler/split_policy.h"

namespace tteps::scheduler {

double Goodput(const GoodputModel& m, const std::vector<int64_t>& alpha) {
  double slowest = 0, batch = m.fixed_trips;
  for (size_t i = 0; i < alpha.size(); ++i) {
    const double extra = m.extra.empty() ? 0.0 : m.extra[i];
    slowest = std::max(slowest, (alpha[i] + extra) * m.seconds[i]);
    batch += alpha[i] * m.trips[i];
  }
  const double step_s = slowest + m.overhead_s;
  if (step_s <= 0) return 0;
  return batch / step_s * StatisticalEfficiency(m.step_model, m.noise_scale, m.base_batch, batch);
}

std::vector<int64_t> BestSplit(const GoodputModel& m, int64_t lo, int64_t hi) {
  const auto w = static_cast<int64_t>(m.seconds.size());
  std::vector<int64_t> best;
  double best_goodput = -1;
  for (int64_t total = w * lo; total <= w * hi; ++total) {
    std::vector<int64_t> split = SpeedShares(m.seconds, total, lo, hi, m.extra);
    const double g = Goodput(m, split);
    if (g > best_goodput) best_goodput = g, best = std::move(split);
  }
  return best;
}

namespace {

// How much of the noise average one more window replaces: the noise scale grows as training
// goes on, and old windows were measured on other weights.
constexpr double kNoiseDecay = 0.9;
constexpr double kMinNoiseSteps = 8;

class GoodputPolicy : public SplitPolicy {
 public:
  GoodputPolicy(int workers, int64_t accumulation, int64_t lo, int64_t hi, StepModel step_model)
      : SplitPolicy(workers, accumulation),
        step_model_(step_model),
        lo_(lo),
        hi_(hi),
        start_(accumulation),
        overhead_(workers, -1.0),
        trips_(workers, 0.0) {}

  void Observe(const ppo::WindowReport& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t w = static_cast<size_t>(r.worker);
    if (w >= alpha_.size() || orphaned_[w] || r.alpha <= 0 || r.losses.empty()) return;
    if (r.noise_steps > 0) {
      noise_.Decay(kNoiseDecay);
      noise_.Add(r.noise, static_cast<double>(r.noise_steps));
    }
    if (!Measure(r)) return;
    const double steps = static_cast<double>(r.losses.size());
    trips_[w] = r.trips / (steps * (static_cast<double>(r.alpha) + extra_[w]));
    overhead_[w] = std::max(0.0, r.step_s - r.compute_s);
    Decide(r.step);
  }

  void Forget(size_t slice) override { overhead_[slice] = -1; }

 private:
  void Decide(int64_t step) {
    // The model of the slices a decision may change; the orphaned ones' trips are fixed.
    GoodputModel m;
    m.step_model = step_model_;
    m.overhead_s = -1;
    std::vector<size_t> owned;
    std::vector<int64_t> alpha;
    for (size_t i = 0; i < alpha_.size(); ++i) {
      if (orphaned_[i]) {
        m.fixed_trips += alpha_[i] * trips_[i];
        continue;
      }
      if (!meter_.fresh(i) || overhead_[i] < 0) return;  // the round is not complete
      owned.push_back(i);
      alpha.push_back(alpha_[i]);
      m.seconds.push_back(meter_.seconds(i));
      m.trips.push_back(trips_[i]);
      m.extra.push_back(extra_[i]);
      // The slowest worker waits least: its step beyond its compute is the exchange's own time.
      m.overhead_s = m.overhead_s < 0 ? overhead_[i] : std::min(m.overhead_s, overhead_[i]);
    }
    if (owned.empty()) return;
    meter_.NewRound();
    if (base_batch_ <= 0) {
      for (double b : trips_) base_batch_ += start_ * b;
    }
    m.base_batch = base_batch_;
    // Until the noise is known, only the split may change (the speed policy's move).
    const bool noise_known = noise_.weight() >= kMinNoiseSteps;
    m.noise_scale = noise_known ? ResolvedNoiseScale(noise_) : std::nan("");
    std::vector<int64_t> next;
    if (noise_known && !std::isnan(m.noise_scale)) {
      next = BestSplit(m, lo_, hi_);
    } else {
      int64_t total = 0;
      for (int64_t a : alpha) total += a;
      next = SpeedShares(m.seconds, total, lo_, hi_, m.extra);
    }
    if (Goodput(m, next) < 1.05 * Goodput(m, alpha)) return;
    for (size_t k = 0; k < owned.size(); ++k) {
      const size_t i = owned[k];
      if (next[k] == alpha_[i]) continue;
      AlphaDecision d;
      d.worker = static_cast<int>(i);
      d.step = step;
      d.old_alpha = alpha_[i];
      d.new_alpha = next[k];
      d.action = "goodput";
      d.observation = {static_cast<float>(m.noise_scale), static_cast<float>(Goodput(m, next)),
                       static_cast<float>(meter_.seconds(i))};
      decisions_.Push(std::move(d));
      alpha_[i] = next[k];
    }
  }

  const StepModel step_model_;
  const int64_t lo_, hi_, start_;
  std::vector<double> overhead_;  // per worker: step beyond compute; -1: not measured
  std::vector<double> trips_;     // per worker: trips per micro-batch
  double base_batch_ = 0;         // M0, in trips: set at the first decision
  NoiseSum noise_;                // decaying average over the windows
};

}  // namespace

std::unique_ptr<AccumulationPolicy> MakeGoodputPolicy(int workers, int64_t accumulation, int64_t lo,
                                                      int64_t hi, StepModel step_model) {
  if (lo < 2) {
    throw std::invalid_argument(
        "--accumulation_policy goodput: --accumulation_min must be >= 2 (a worker measures the "
        "gradient noise from two micro-batches or more)");
  }
  if (workers < 1 || accumulation < lo || accumulation > hi) {
    throw std::invalid_argument(
        "--accumulation_policy goodput: --accumulation must lie in [--accumulation_min, "
        "--accumulation_max]");
  }
  return std::make_unique<GoodputPolicy>(workers, accumulation, lo, hi, step_model);
}

}  // namespace tteps::scheduler
