// When to evaluate: every N steps, every S seconds of training, or (neither set) after every
// epoch; the end of training is always evaluated, by the caller. One rule for the local
// trainer, worker 0 of the ring modes and the scheduler of the parameter-server modes.
#pragma once

#include <cereal/cereal.hpp>
#include <cstdint>

namespace tteps {

struct EvalScheduleConfig {
  int64_t every_steps = 0;  // > 0: after every this many steps
  double every_s = 0;       // > 0: every this many training seconds (wins over every_steps)

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(every_steps), CEREAL_NVP(every_s));
  }
};

class EvalSchedule {
 public:
  explicit EvalSchedule(EvalScheduleConfig c) : c_(c) {}
  // Whether an evaluation is due after `steps` steps, `epochs_done` finished epochs and
  // `train_s` training seconds. It stays due until Taken().
  bool Due(int64_t steps, int64_t epochs_done, double train_s) const {
    if (c_.every_s > 0) return train_s - last_s_ >= c_.every_s;
    if (c_.every_steps > 0) return steps / c_.every_steps > last_steps_ / c_.every_steps;
    return epochs_done > last_epochs_;
  }
  void Taken(int64_t steps, int64_t epochs_done, double train_s) {
    last_steps_ = steps;
    if (epochs_done > last_epochs_) last_epochs_ = epochs_done;
    last_s_ = train_s;
  }
  bool per_epoch() const { return c_.every_s <= 0 && c_.every_steps <= 0; }
  // Starting later than step 0 (a resumed job): nothing before `steps` is due.
  void StartAt(int64_t steps, int64_t epochs_done) {
    last_steps_ = steps;
    last_epochs_ = epochs_done;
  }

 private:
  EvalScheduleConfig c_;
  int64_t last_steps_ = 0, last_epochs_ = 0;
  double last_s_ = 0;
};

}  // namespace tteps
