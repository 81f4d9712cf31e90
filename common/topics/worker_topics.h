// The control messages between the scheduler and the workers: each topic of kReport (worker to
// scheduler) and kCommand (scheduler to worker) with its typed body (common/topic.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/slice_schedule.h"
#include "common/topic.h"
#include "common/topics/train_report.h"

namespace tteps::topics {

// --- worker -> scheduler -----------------------------------------------------------------------

// Data loaded, model built.
struct Ready {
  int64_t first_step = 0;
  template <class A>
  void serialize(A& ar) {
    ar(first_step);
  }
};
inline constexpr Topic<Ready> kReady{"ready"};
inline constexpr Topic<TrainReport> kTrainReport{"train-report"};
// Ring modes, worker 0: one payload, the weights after `steps` steps (`final`: the last ones).
struct Snapshot {
  int64_t steps = 0;
  bool final = false;
  template <class A>
  void serialize(A& ar) {
    ar(steps, final);
  }
};
inline constexpr Topic<Snapshot> kSnapshot{"snapshot"};
// Training is over for this worker: the steps it took, in the cluster map's `epoch` (one sent
// before a rollback the worker had not heard of yet is of the old epoch).
struct Done {
  int64_t steps = 0;
  int32_t epoch = 0;
  template <class A>
  void serialize(A& ar) {
    ar(steps, epoch);
  }
};
inline constexpr Topic<Done> kDone{"done"};
// The worker leaves the job (SIGTERM or SIGINT to it) after `steps` steps, at a step boundary:
// its slices go to the others at once (a release: a loss without the silence), and it exits 0.
struct Leaving {
  int64_t steps = 0;
  std::string signal;  // what asked it to leave
  template <class A>
  void serialize(A& ar) {
    ar(steps, signal);
  }
};
inline constexpr Topic<Leaving> kLeaving{"leaving"};
// Sync: this worker no longer computes `slice` (the view handed it over to a joiner) from step
// `step` on (it pushed the slice for every step before).
struct Released {
  int32_t slice = 0;
  int64_t step = 0;
  template <class A>
  void serialize(A& ar) {
    ar(slice, step);
  }
};
inline constexpr Topic<Released> kReleased{"released"};
// An accumulation policy changed this worker's own accumulation (sent before that step's push).
inline constexpr Topic<AccumulationChange> kAccumulationChanged{"accumulation-changed"};

// --- scheduler -> worker -----------------------------------------------------------------------

// Every worker is ready: start training. A worker that joined: `step` is its first step and
// `schedule` its slice's accumulation schedule (SliceSchedule::Encode; empty: none).
struct Go {
  int64_t step = -1;
  std::string schedule;
  template <class A>
  void serialize(A& ar) {
    ar(step, schedule);
  }
};
inline constexpr Topic<Go> kGo{"go"};
// The time budget is spent (or --patience ran out): stop where all agree.
inline constexpr Topic<NoBody> kStop{"stop"};
// Leave the job at the next step boundary, as on SIGTERM (launch/tteps --release).
inline constexpr Topic<NoBody> kLeave{"leave"};
// An accumulation policy's decision: micro-batches per step from the next step drawn.
struct SetAccumulation {
  int64_t accumulation = 1;
  template <class A>
  void serialize(A& ar) {
    ar(accumulation);
  }
};
inline constexpr Topic<SetAccumulation> kSetAccumulation{"set-accumulation"};
// Every membership change (a worker or server lost, a join, a handover, a pause, a rollback to
// a checkpoint on the servers left): the view (common/view.h, topic "view"), which the workers
// and the servers follow.

}  // namespace tteps::topics
