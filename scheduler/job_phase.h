// The phases of a job as the scheduler runs it, and the moves between them, in one place:
//   registering -> ready -> training -> draining -> done, and any phase but done -> failed.
// registering: nodes register; ready: every node has the cluster map, the workers load their
// data; training: every worker reported ready and was told to go; draining: every worker is
// done, the final evaluation and the servers' statistics are awaited.
#pragma once

#include <stdexcept>
#include <string>

namespace tteps::scheduler {

enum class Phase { kRegistering, kReady, kTraining, kDraining, kDone, kFailed };

inline const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kRegistering:
      return "registering";
    case Phase::kReady:
      return "ready";
    case Phase::kTraining:
      return "training";
    case Phase::kDraining:
      return "draining";
    case Phase::kDone:
      return "done";
    case Phase::kFailed:
      return "failed";
  }
  return "unknown";
}

// Whether a job may move from `from` to `to`: one step forward, or to failed from any phase
// that has not ended.
inline bool CanMove(Phase from, Phase to) {
  if (to == Phase::kFailed) return from != Phase::kDone && from != Phase::kFailed;
  return static_cast<int>(to) == static_cast<int>(from) + 1 && to != Phase::kFailed;
}

class JobPhase {
 public:
  Phase get() const { return phase_; }
  bool is(Phase p) const { return phase_ == p; }
  // At or past `p` on the way to done (a failed job is past none).
  bool reached(Phase p) const {
    return phase_ != Phase::kFailed && static_cast<int>(phase_) >= static_cast<int>(p);
  }
  // Throws std::logic_error on a move CanMove refuses.
  void MoveTo(Phase to) {
    if (!CanMove(phase_, to)) {
      throw std::logic_error(std::string("the job cannot go from ") + PhaseName(phase_) + " to " +
                             PhaseName(to));
    }
    phase_ = to;
  }

 private:
  Phase phase_ = Phase::kRegistering;
};

}  // namespace tteps::scheduler
