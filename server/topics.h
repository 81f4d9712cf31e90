// The control messages between the scheduler and the servers (kReport and kCommand topics).
#pragma once

namespace tteps::server::topics {

// Server -> scheduler: norm = the squared norm of its part of version `step`'s aggregate
// (sync mode with clipping).
inline constexpr char kNormPartial[] = "norm-partial";
// Scheduler -> servers: norm = the global gradient norm of version `step`.
inline constexpr char kNormTotal[] = "norm-total";
// Scheduler -> servers (async / SSP): step = the id of a worker declared lost.
inline constexpr char kWorkerLost[] = "worker-lost";
// Scheduler -> servers (async / SSP): a worker joined in a lost worker's place: step = the lost
// worker's id (its slot), samples = the joiner's id, norm = the step it starts at (its clock).
inline constexpr char kWorkerJoined[] = "worker-joined";
// Scheduler -> servers (--replicas): step = the id of a server declared lost; another holds
// its range.
inline constexpr char kServerLost[] = "server-lost";
// Scheduler -> servers and workers: text = the new ClusterMap (a lost server without a
// replica): restore its checkpoint version on the new ranges and go on from there.
inline constexpr char kRollback[] = "rollback";
// Server -> scheduler, at the end: text = its ServerStats (Cereal).
inline constexpr char kStats[] = "server-stats";

}  // namespace tteps::server::topics
