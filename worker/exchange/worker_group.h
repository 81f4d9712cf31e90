// The workers of the ring modes as one group: sums over their communicator on a communication
// thread (so backward can go on while a bucket is reduced), each bounded by the timeout and
// naming the peer that stalls; the start from worker 0's weights; and the periodic check that
// every worker holds bitwise-identical weights. Shared by the ring and averaging exchanges.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/topics/train_report.h"
#include "common/trace.h"
#include "model/deeptte/deeptte.h"
#include "model/param_layout.h"
#include "worker/collectives/allreduce.h"
#include "worker/collectives/comm_thread.h"

namespace tteps {

// The ring of the group's current members (a group that survives a lost worker).
struct RingView {
  std::unique_ptr<collectives::Allreduce> allreduce;
  std::vector<int> ids;  // worker ids in ring order
};

struct WorkerGroupOptions {
  int worker = 0, num_workers = 1;
  double timeout_s = 30;                  // bound of every collective
  int64_t check_every = 20;               // steps between identity checks
  std::vector<std::string> worker_names;  // by id, to name a stalled peer
  Tracer* tracer = nullptr;               // allreduce spans on the communication row
  // Set where the group can lose a worker (the TCP ring): whether a worker was lost since the
  // ring was built, and the ring of the survivors.
  std::function<bool()> membership_changed;
  std::function<RingView()> rebuild;
  // When another worker was last seen computing: the collectives wait on while one does
  // (common/busy_peers.h). Unset: --timeout_s from each collective's start.
  BusySeen busy_seen;
};

class WorkerGroup {
 public:
  static constexpr int kCommRow = 2;  // the communication thread's row on the timeline

  // `allreduce` runs over the workers' communicator (rank = worker id); `shutdown` says the job
  // ended elsewhere, so that a waiting collective gives up at once.
  WorkerGroup(deeptte::DeepTTEImpl& model, std::unique_ptr<collectives::Allreduce> allreduce,
              WorkerGroupOptions o, std::function<bool()> shutdown);
  ~WorkerGroup();

  // The flat buffer summed over the workers: the layout's floats, then kSlots more that are
  // summed with them: the trip count and the stop votes (workers told that the time budget is
  // spent), and with --lr_scaling adascale the slices' pieces (Σ squared norms, Σ trips^2).
  static constexpr int64_t kSlots = 4;
  float* flat() { return flat_.data(); }
  const ParamLayout& layout() const { return layout_; }
  float& trips_slot() { return flat_[layout_.total()]; }
  float& stop_slot() { return flat_[layout_.total() + 1]; }
  float* noise_slots() { return &flat_[layout_.total() + 2]; }  // 2 floats

  // Queues the sum of data[0, n) over the workers on the communication thread.
  void SubmitSum(float* data, size_t n);
  // Waits for everything queued; a stalled peer is named in the std::runtime_error.
  void Drain(double timeout_s);
  // Sums data[0, n) over the workers and waits for it.
  void SumNow(float* data, size_t n);
  // Every worker takes worker 0's weights (as DDP starts).
  void StartFromWorker0();
  // After `steps` steps: every check_every steps, at the first step where the weights should
  // agree (or at the last step), checks that they are bitwise identical; a mismatch throws. A
  // check given up for a lost worker (MembershipChanged) is not run again.
  void MaybeCheck(int64_t steps, bool agreed, bool last);
  // The window's mean seconds per step in collectives (allreduce_s); starts a new window.
  void Report(TrainReport* report, int64_t steps);
  double timeout_s() const { return o_.timeout_s; }
  int worker() const { return o_.worker; }

  // Whether the group can lose a worker and go on (collectives then throw
  // collectives::MembershipChanged when one is lost).
  bool can_rebuild() const { return static_cast<bool>(o_.rebuild); }
  // After a collective threw MembershipChanged: the group of the survivors (waits until the
  // failed collectives have ended).
  void Rebuild();
  // Every member's `value` (exact up to 2^24), in ring order; throws like Drain.
  std::vector<int64_t> Gather(int64_t value);
  // This worker's position in the ring, and the worker ids in ring order.
  int position() const { return position_; }
  const std::vector<int>& ids() const { return ids_; }

 private:
  void CheckIdentical(int64_t steps);
  void SetChecks();  // the current allreduce's abort and membership checks
  std::string PeerName(int peer) const;

  deeptte::DeepTTEImpl& model_;
  std::unique_ptr<collectives::Allreduce> allreduce_;
  WorkerGroupOptions o_;
  ParamLayout layout_;
  std::vector<float> flat_;
  bool check_due_ = false;
  std::function<bool()> shutdown_;
  std::atomic<bool> stopping_{false};
  int64_t identical_at_ = -1;  // the last step checked with identical parameters (-1: none)
  std::unique_ptr<collectives::CommThread> comm_;
  int position_ = 0;
  std::vector<int> ids_;  // worker ids in ring order
};

}  // namespace tteps
