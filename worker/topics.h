// The control messages between the scheduler and the workers: the topics of kReport (worker to
// scheduler) and kCommand (scheduler to worker) messages, and what their fields carry.
#pragma once

namespace tteps::topics {

// Worker -> scheduler.
inline constexpr char kReady[] = "ready";  // data loaded, model built; step: the first step
inline constexpr char kTrainReport[] = "train-report";  // text: a TrainReport (Cereal)
// Ring modes, worker 0: one payload, the weights after `step` steps; samples 1: the final ones.
inline constexpr char kSnapshot[] = "snapshot";
inline constexpr char kDone[] = "done";  // step: the steps taken; samples: the map's epoch
// Sync: samples = a slice this worker no longer computes (kReleaseSlice), step = the first step
// it left out (it pushed the slice for every step before).
inline constexpr char kReleased[] = "released";
// An accumulation policy changed this worker's own accumulation (sent before that step's push):
// step = the first step drawn with it, samples = the micro-batches its slice's stream had drawn
// before, norm = the new accumulation (common/slice_schedule.h).
inline constexpr char kAccumulationChanged[] = "accumulation-changed";

// Scheduler -> worker.
// every worker is ready: start training (a worker that joined: step = its first step)
inline constexpr char kGo[] = "go";
inline constexpr char kStop[] = "stop";  // the time budget is spent: stop where all agree
inline constexpr char kSetAccumulation[] = "set-accumulation";  // samples: micro-batches/step
// Sync and ring: step = the id of a lost worker whose slice of every step this worker now
// computes and pushes too, from the step it is in (or waits to complete); text = the slice's
// accumulation schedule (SliceSchedule::Encode): how many micro-batches each step draws.
inline constexpr char kAdoptSlice[] = "adopt-slice";
// Sync: step = an adopted slice that a joining worker takes over; stop computing it from the
// next step (and say from which: kReleased).
inline constexpr char kReleaseSlice[] = "release-slice";
// --min_workers (sync, async, SSP): samples 1: fewer workers live than that; stop before the
// next step (or in the pull waiting for one) until samples 0 comes (one joined); text: why. A
// worker that joins while training is paused gets samples 1 after its go.
inline constexpr char kPause[] = "pause";
// step = the id of a worker declared lost (the job goes on without it).
inline constexpr char kPeerLost[] = "peer-lost";
// --replicas: step = the id of a server declared lost; its range is read from a replica.
inline constexpr char kServerLost[] = "server-lost";
// text = the new ClusterMap after a server was lost without a replica: train again from its
// start_steps on its servers (epoch + 1).
inline constexpr char kRollback[] = "rollback";

}  // namespace tteps::topics
