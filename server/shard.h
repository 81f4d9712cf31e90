// One server's slice of the parameters and the consistency model that decides when pushes are
// applied and when pulls may be answered. Pure logic (no sockets) so that it is unit tested.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/adascale.h"
#include "common/key_range.h"
#include "common/mode.h"
#include "server/optimizer.h"
#include "server/sync_sum.h"

namespace tteps::server {

enum class Consistency { kSync, kAsync, kSsp };
// The servers' consistency model of a parameter-server mode; throws std::invalid_argument
// for the others.
Consistency ConsistencyFor(Mode mode);

class Shard {
 public:
  // The learning rate of each update from its step (common/lr_schedule.h): sync, the version
  // it makes; async and SSP, the pushes received / workers. Unset: the optimizer's own rate.
  void set_lr_schedule(std::function<double(int64_t)> lr_at) { rate_.schedule = std::move(lr_at); }

  Shard(KeyRange range, Consistency mode, int num_workers, int64_t staleness,
        std::unique_ptr<Optimizer> optimizer);

  // The initial values (from worker 0). Pulls are held until then.
  void Init(const float* values);
  bool initialized() const { return initialized_; }

  // A gradient sum over `samples` trips computed on parameters of `grad_version`.
  // sync: summed into the current version's aggregate; when every worker has pushed, one
  //   optimizer step with sum / total samples (Σ n_i g_i / Σ n_i) makes the next version.
  // async / ssp: applied at once with sum / samples.
  // Returns the push's staleness (version at arrival - grad_version). Throws
  // std::invalid_argument for a push the model forbids (sync: wrong version or a second push).
  // With clipping on (set_clip_norm): async / ssp pushes carry `mean_grad_norm`, the global
  // norm of sum / samples computed by the worker; a sync step first needs the global norm of
  // the aggregate from all shards (awaiting_norm(), then CompleteStep).
  // `spans` (sorted, disjoint, inside range()) say which keys `grad_sum` holds, back to back;
  // the gradient of every other key is zero (a sparse push sends the embedding rows its trips
  // used). sync sums the pushes in worker order, whatever order they arrive in, so a step's
  // aggregate does not depend on the network.
  // sync only: `more` marks a part of a push sent while backward still runs (its buckets);
  // parts add to the worker's push, and the push with more = false (its samples, the rest of
  // its keys) completes it. The sum is the same as one push of it all.
  // `noise` (a push's last part, with AdaScale on): the pieces of the worker's slice.
  int64_t Push(int worker, int64_t grad_version, int64_t samples,
               const std::vector<KeyRange>& spans, const float* grad_sum,
               double mean_grad_norm = -1, bool more = false, PieceNoise noise = {});
  // A dense push: grad_sum holds every key of range().
  int64_t Push(int worker, int64_t grad_version, int64_t samples, const float* grad_sum,
               double mean_grad_norm = -1) {
    return Push(worker, grad_version, samples, {range_}, grad_sum, mean_grad_norm);
  }

  // Sync, --lr_scaling adascale: every step's rate times the gain of its batch. The gain needs
  // the step's global gradient norm, so a step waits for it as with clipping (awaiting_norm(),
  // then CompleteStep); the slices' pieces come with their pushes, folded in worker order.
  void set_adascale(std::unique_ptr<AdaScale> adascale);
  const AdaScale* adascale() const { return gain_.scale.get(); }
  // A checkpoint's AdaScale state (ignored without AdaScale).
  void RestoreAdaScale(const AdaScale::State& s) {
    if (gain_.scale) gain_.scale->Restore(s);
  }
  // The gain of the last step (1 without AdaScale), and over every step of this shard.
  double lr_gain() const { return gain_.last; }
  struct GainStats {
    int64_t steps = 0;
    double sum = 0, min = 0, max = 0;
  };
  const GainStats& gain_stats() const { return gain_.stats; }

  // Clipping by global norm (0: off).
  void set_clip_norm(double max_norm) { clip_norm_ = max_norm; }
  // sync with clipping: the aggregate of the current version is complete and waits for the
  // global norm; partial_squared_norm() is this shard's share of it.
  bool awaiting_norm() const { return awaiting_norm_; }
  double partial_squared_norm() const { return partial_sq_; }
  void CompleteStep(double global_norm);

  // Whether a pull may be answered now. `want`: sync, the version; ssp, the worker's clock
  // (pushes it has made); async: ignored.
  bool PullReady(int worker, int64_t want) const;

  // A push computed on `grad_version` carried the stop flag (the job's time budget is spent).
  // sync: every worker's pull of grad_version + 1 learns that training ends there, so all
  //   stop after the same step. async / ssp: every pull is answered at once, with the flag,
  //   so no worker waits for one that has stopped.
  void RequestStop(int64_t grad_version);
  // Whether a pull answered with `version` tells the worker to stop.
  bool Stopping(int64_t version) const;

  // The scheduler declared `worker` lost (silent past --silence_s). Async / SSP: its clock no
  // longer holds back the others' pulls (SSP), and its late pushes are refused. Sync: its slice
  // of each step is pushed by another worker from now on (the server refuses the lost worker's
  // own late pushes); the parts of a push it left incomplete are dropped.
  void DropWorker(int worker);
  // Async / SSP: a worker that joined takes a dropped worker's place, with `clock` pushes
  // counted (the step it starts at): its pushes count and its clock holds SSP's pulls again.
  void Rejoin(int worker, int64_t clock);
  // Sync: whether `worker`'s slice of the version being collected is complete.
  bool pushed(int worker) const { return sync_ && sync_->pushed(worker); }
  bool dropped(int worker) const { return dropped_[worker]; }

  // Workers whose pushes a pull waiting for `want` still needs (for error messages).
  std::vector<int> Blockers(int worker, int64_t want) const;

  Consistency consistency() const { return mode_; }
  int64_t version() const { return version_; }
  const KeyRange& range() const { return range_; }
  // The current values. The pointer stays valid (and unchanged) while the caller holds it:
  // a step that finds the buffer shared writes into a fresh copy instead (copy-on-write), so
  // zero-copy pull replies in flight are never modified.
  std::shared_ptr<const std::vector<float>> values() const { return values_; }
  // Sync: the values of `version` if it is the current one or the one before (kept for exact
  // pulls); null otherwise.
  std::shared_ptr<const std::vector<float>> ValuesAt(int64_t version) const;
  int64_t clock(int worker) const { return clocks_[worker]; }
  const std::vector<int64_t>& clocks() const { return clocks_; }
  Optimizer& optimizer() { return *optimizer_; }
  // FNV-1a over range, version, values and optimizer state (steps and buffers): equal for two
  // shards that are bit-identical.
  uint64_t StateHash() const;
  // Restores values, version and clocks (checkpoint resume); the AdaScale state apart.
  void Restore(std::vector<float> values, int64_t version, std::vector<int64_t> clocks);

 private:
  // grad_ = grad_sum / samples; then clip (when on) and step the optimizer.
  static float MeanScale(int64_t samples) {
    return static_cast<float>(1.0 / static_cast<double>(samples));  // as the local trainer
  }
  void Mean(const float* grad_sum, int64_t samples);  // into grad_
  void Step(double global_norm);                      // clip grad_ if on, then step with it
  void StepWith(const float* grad, float scale);
  void ApplySum(const float* grad_sum, int64_t samples, double mean_grad_norm);
  int64_t MinClock() const;
  int64_t ScheduleStep() const;  // the step an update's rate is of
  // Push's parts: the checks every mode makes (throws std::invalid_argument), a sync push
  // summed in worker order (or held until its turn), and the step applied once every worker's
  // push is in.
  void CheckPush(int worker, int64_t grad_version, int64_t samples,
                 const std::vector<KeyRange>& spans, bool more) const;
  void PushSync(int worker, int64_t grad_version, int64_t samples,
                const std::vector<KeyRange>& spans, const float* grad_sum, bool more,
                PieceNoise noise);
  void CompleteSyncStep();
  // The gradient as one dense range: `values` itself when the spans cover the range, else
  // scattered into a zeroed buffer.
  const float* Densify(const std::vector<KeyRange>& spans, const float* values);

  // The rate of an update: the schedule's (empty: the optimizer's `base` throughout).
  struct Rate {
    std::function<double(int64_t)> schedule;
    double base = 0;
  };
  // Sync with AdaScale: the estimator, what the step awaiting its norm brings it (its slices'
  // pieces summed, its trips), and the gains it gave.
  struct Gain {
    std::unique_ptr<AdaScale> scale;
    PieceNoise step_noise;
    int64_t step_trips = 0;
    double last = 1;
    GainStats stats;
  };

  KeyRange range_;
  Consistency mode_;
  int num_workers_;
  int64_t staleness_;
  std::unique_ptr<Optimizer> optimizer_;
  Rate rate_;
  std::shared_ptr<std::vector<float>> values_;
  std::shared_ptr<const std::vector<float>> previous_;  // sync: the values of version_ - 1
  bool initialized_ = false;
  int64_t version_ = 0;
  std::vector<int64_t> clocks_;    // pushes per worker
  std::vector<bool> dropped_;      // declared lost
  std::unique_ptr<SyncSum> sync_;  // sync: the aggregate of the version being collected
  std::vector<float> grad_;
  std::vector<float> dense_;  // Densify's buffer
  double clip_norm_ = 0;
  Gain gain_;
  bool awaiting_norm_ = false;
  double partial_sq_ = 0;
  int64_t stop_version_ = -1;  // -1: no stop requested
};

}  // namespace tteps::server
