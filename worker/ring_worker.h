// A worker of the ring modes (workers only, no servers).
//   ring:    alpha micro-batches of forward/backward -> the gradient sum and the trip count
//            are summed over the workers, bucket by bucket while backward still runs ->
//            divided by the total count -> every worker takes the same LibTorch optimizer step.
//   average: every worker takes local optimizer steps on its own slices; every average_every
//            steps the parameters are averaged over the workers, weighted by trips.
// Every check_every steps the workers compare hashes of their parameters: they must be
// bitwise identical, and a mismatch fails the job. Worker 0 sends parameter snapshots to the
// scheduler, which evaluates them.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/control_channel.h"
#include "worker/collectives/allreduce.h"
#include "worker/collectives/comm_thread.h"
#include "worker/data/trip.h"
#include "worker/deeptte/deeptte.h"
#include "worker/grad_buckets.h"
#include "worker/param_layout.h"
#include "worker/ring_options.h"
#include "worker/slice_stream.h"
#include "worker/train_options.h"

namespace tteps {

struct RingWorkerOptions {
  RingOptions ring;
  int worker = 0, num_workers = 1;
  int64_t accumulation = 1;               // micro-batches per step (the scheduler may change it)
  int64_t first_worker_batch = -1;        // slicing rule; -1: even split
  int64_t slowdown_percent = 0;           // test knob: sleep this % of compute time after each step
  double timeout_s = 30;                  // bound of every collective
  std::vector<std::string> worker_names;  // by id, to name a stalled peer
  Tracer* tracer = nullptr;  // --trace: compute, wait, optimizer; allreduce on the comm row
};

class RingWorker {
 public:
  // `allreduce` runs over the workers' communicator (rank = worker id).
  RingWorker(deeptte::DeepTTE model, const std::vector<data::Trip>& train, const TrainOptions& opts,
             const RingWorkerOptions& ro, collectives::Allreduce* allreduce,
             ControlChannel* control);
  ~RingWorker();
  // Runs every step; throws std::runtime_error naming the peer on a failed collective.
  void Run();
  static constexpr int kCommRow = 2;  // the communication thread's row on the timeline

 private:
  struct StepResult {
    double loss_sum = 0;
    int64_t trips = 0;
  };
  // Returns the steps taken: all of them, or fewer when the time budget stopped training.
  int64_t RunSteps();
  // Forward/backward of `alpha` micro-batches; in ring mode the last one's gradients are
  // reduced bucket by bucket as backward produces them.
  StepResult ComputeGradients(SliceStream& stream, int64_t alpha, bool reduce);
  void OnGradient(int entry, const at::Tensor& grad);
  // Writes entry's gradient into the flat buffer: .grad so far plus `incoming` (either may be
  // missing; zeros if both are), then releases the buckets this completes.
  void WriteGradient(int entry, const at::Tensor* incoming);
  void SubmitBuckets(const std::vector<int>& buckets);
  // Queues the sum of data[0, n) over the workers on the communication thread.
  void SubmitSum(float* data, size_t n);
  // Sums flat_[begin, end) over the workers on the communication thread and waits for it.
  void SumNow(float* data, size_t n);
  // Parameters replaced by their trip-weighted average over the workers. Returns whether any
  // worker voted to stop (its time budget is spent).
  bool AverageParameters(int64_t trips);
  void CheckIdentical(int64_t step);
  void SendSnapshot(int64_t step, bool final);
  std::string PeerName(int peer) const;

  deeptte::DeepTTE model_;
  const std::vector<data::Trip>& train_;
  TrainOptions opts_;
  RingWorkerOptions ro_;
  collectives::Allreduce* allreduce_;
  ControlChannel* control_;
  ParamLayout layout_;
  std::vector<at::Tensor> params_;  // in layout order
  // The flat gradient (ring) or parameters (average), plus two floats summed with them: the
  // trip count and the stop votes (workers told that the time budget is spent).
  std::vector<float> flat_;
  size_t trips_slot() const { return layout_.total(); }
  size_t stop_slot() const { return layout_.total() + 1; }
  float StopVote() const { return control_->StopRequested() ? 1.0f : 0.0f; }
  std::unique_ptr<BucketTracker> tracker_;
  bool armed_ = false;  // the gradient hooks act (the last micro-batch of a ring step)
  std::atomic<bool> stopping_{false};
  std::unique_ptr<collectives::CommThread> comm_;
  std::vector<unsigned> hook_handles_;
};

}  // namespace tteps
