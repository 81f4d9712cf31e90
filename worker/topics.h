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

// Scheduler -> worker.
inline constexpr char kGo[] = "go";      // every worker is ready: start training
inline constexpr char kStop[] = "stop";  // the time budget is spent: stop where all agree
inline constexpr char kSetAccumulation[] = "set-accumulation";  // samples: micro-batches/step
// Sync mode: step = the id of a lost worker whose slice of every step this worker now computes
// and pushes too, from the step it is in (or waits to complete).
inline constexpr char kAdoptSlice[] = "adopt-slice";
// step = the id of a worker declared lost (the job goes on without it).
inline constexpr char kPeerLost[] = "peer-lost";
// --replicas: step = the id of a server declared lost; its range is read from a replica.
inline constexpr char kServerLost[] = "server-lost";
// text = the new ClusterMap after a server was lost without a replica: train again from its
// start_steps on its servers (epoch + 1).
inline constexpr char kRollback[] = "rollback";

}  // namespace tteps::topics
