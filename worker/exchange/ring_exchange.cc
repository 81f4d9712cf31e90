// The ring-allreduce exchange: the step's gradient sum and trip count are summed over the
// workers bucket by bucket while the last micro-batch's backward still runs (as DDP's
// Reducer does), divided by the total count, and every worker takes the same optimizer step.
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

#include "common/clock.h"
#include "model/model_params.h"
#include "worker/exchange/exchanges.h"
#include "worker/exchange/gradient_hooks.h"
#include "worker/exchange/local_optimizer.h"
#include "worker/exchange/worker_group.h"
#include "worker/grad_buckets.h"

namespace tteps {
namespace {

class RingExchange : public Exchange {
 public:
  // `bucket_mb`: gradient bucket size (<= 0: one bucket).
  RingExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
               std::unique_ptr<WorkerGroup> group, double bucket_mb, Tracer* tracer,
               std::unique_ptr<AdaScale> adascale);
  void Start(int64_t first_step, const TableRows* rows) override;
  void BeginStep(const StepStart& s) override;
  ExchangeResult Finish(const StepEnd& e) override;
  void PushSlice(const SlicePush& p) override;
  void Report(TrainReport* report, int64_t steps) override;

 private:
  // Bucket b of the flat buffer is complete: kept (a survivable group), the adopted slices'
  // gradients added, and submitted to the ring.
  void OnBucket(int b);
  // AdaScale: the step's pieces (this worker's slice and those it adopted) go into the noise
  // slots, summed after every bucket (they are known only once backward is done).
  void SubmitNoise();
  // The summed buffer is complete: the optimizer step, then the identity check.
  ExchangeResult Apply(int64_t step, bool planned_last, ExchangeResult res);
  // A worker was lost during step `step` (`applied`: after this worker had taken it). Rebuilds
  // the ring; the survivors agree on the last step any of them completed, and those one step
  // behind take its sum from one that has it. Returns when this worker has completed `step`,
  // or with view_changed when the step must be summed again over the survivors (the driver
  // first computes the lost worker's slice where it was given).
  ExchangeResult Recover(int64_t step, bool applied, bool planned_last);
  // The step again, over the rebuilt ring.
  ExchangeResult Resum(int64_t step, bool planned_last);

  deeptte::DeepTTEImpl& model_;
  LocalOptimizer optimizer_;
  std::unique_ptr<WorkerGroup> group_;
  Tracer* tracer_;
  std::unique_ptr<GradientHooks> hooks_;  // each completed bucket is submitted to the ring
  // Survivable groups only: this worker's own contribution to the step, before the ring summed
  // it in place; the lost slices computed here this step; the last completed step's sum.
  std::vector<float> own_, adopted_, last_sum_;
  bool has_adopted_ = false;
  bool scaled_ = false;  // --lr_scaling adascale
  PieceNoise pieces_;    // of the own slice of the step being finished
};

RingExchange::RingExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                           std::unique_ptr<WorkerGroup> group, double bucket_mb, Tracer* tracer,
                           std::unique_ptr<AdaScale> adascale)
    : model_(model),
      optimizer_(model, opts, std::move(adascale)),
      group_(std::move(group)),
      tracer_(tracer),
      scaled_(opts.lr_scaling != "none") {
  const ParamLayout& layout = group_->layout();
  auto buckets = PlanBuckets(layout, bucket_mb * (1 << 20));
  if (!buckets.empty()) buckets[0].end += 2;  // trip count and stop votes ride with bucket 0
  hooks_ = std::make_unique<GradientHooks>(model, layout, std::move(buckets),
                                           [this](int b) { OnBucket(b); });
  if (group_->can_rebuild()) {
    const size_t n = static_cast<size_t>(layout.total() + WorkerGroup::kSlots);
    own_.assign(n, 0.0f);
    adopted_.assign(n, 0.0f);
    last_sum_.assign(n, 0.0f);
  }
  if (group_->worker() == 0) {
    LOG(INFO) << hooks_->buckets().size() << " gradient bucket(s) of up to " << bucket_mb << " MB";
  }
}

void RingExchange::OnBucket(int b) {
  const Bucket& bk = hooks_->buckets()[b];
  float* flat = group_->flat();
  if (!own_.empty()) {
    std::copy(flat + bk.begin, flat + bk.end, own_.begin() + bk.begin);
    if (has_adopted_) {
      for (int64_t i = bk.begin; i < bk.end; ++i) flat[i] += adopted_[i];
    }
  }
  group_->SubmitSum(flat + bk.begin, static_cast<size_t>(bk.end - bk.begin));
}

void RingExchange::Start(int64_t /*first_step*/, const TableRows* /*rows*/) {
  group_->StartFromWorker0();
}

void RingExchange::BeginStep(const StepStart& s) {
  group_->trips_slot() = static_cast<float>(s.trips);  // exact up to 2^24 trips
  group_->stop_slot() = s.stop_vote ? 1.0f : 0.0f;
  hooks_->Arm(group_->flat());
}

void RingExchange::PushSlice(const SlicePush& p) {
  if (adopted_.empty()) {
    throw std::logic_error("slice " + std::to_string(p.slice) +
                           " given to a ring that cannot lose workers");
  }
  // Gradients of several adopted slices add up here, as the step's own do in .grad.
  const ParamLayout& layout = group_->layout();
  std::vector<float> grads(static_cast<size_t>(layout.total()));
  CopyGradsOut(model_, layout, grads.data());
  for (size_t i = 0; i < grads.size(); ++i) adopted_[i] += grads[i];
  adopted_[layout.total()] += static_cast<float>(p.trips);
  adopted_[layout.total() + 2] += static_cast<float>(p.pieces.sq);
  adopted_[layout.total() + 3] += static_cast<float>(p.pieces.n2);
  has_adopted_ = true;
}

void RingExchange::SubmitNoise() {
  if (!scaled_) return;
  float* slots = group_->noise_slots();
  const size_t at = static_cast<size_t>(group_->layout().total() + 2);
  if (!own_.empty()) {
    own_[at] = static_cast<float>(pieces_.sq);
    own_[at + 1] = static_cast<float>(pieces_.n2);
    slots[0] = own_[at] + adopted_[at];
    slots[1] = own_[at + 1] + adopted_[at + 1];
  } else {
    slots[0] = static_cast<float>(pieces_.sq);
    slots[1] = static_cast<float>(pieces_.n2);
  }
  pieces_ = {};
  group_->SubmitSum(slots, 2);
}

ExchangeResult RingExchange::Finish(const StepEnd& e) {
  const int64_t step = e.step;
  const bool planned_last = e.planned_last;
  if (e.again) return Resum(step, planned_last);
  pieces_ = e.pieces;
  ExchangeResult res;
  auto t = Clock::now();
  hooks_->Finish();  // the tensors the last backward gave no gradient
  SubmitNoise();
  res.compute_s += SecondsSince(t);

  t = Clock::now();
  try {
    group_->Drain(group_->timeout_s() * (hooks_->buckets().size() + 1));
  } catch (const collectives::MembershipChanged& e) {
    LOG(WARNING) << e.what();
    return Recover(step, /*applied=*/false, planned_last);
  }
  res.wait_s += SecondsSince(t);
  TraceSince(tracer_, "wait", t);
  return Apply(step, planned_last, res);
}

ExchangeResult RingExchange::Apply(int64_t step, bool planned_last, ExchangeResult res) {
  const float total = group_->trips_slot();
  res.stop = group_->stop_slot() > 0 && !planned_last;
  if (total <= 0) throw std::logic_error("a global batch without trips");

  auto t = Clock::now();
  if (!last_sum_.empty()) {
    std::copy(group_->flat(), group_->flat() + last_sum_.size(), last_sum_.begin());
    std::fill(adopted_.begin(), adopted_.end(), 0.0f);
    has_adopted_ = false;
  }
  CopyGradsIn(model_, group_->layout(), group_->flat());
  const float* noise = group_->noise_slots();
  optimizer_.Step(step, static_cast<int64_t>(total), {noise[0], noise[1]});
  res.compute_s += SecondsSince(t);
  TraceSince(tracer_, "optimizer", t);

  t = Clock::now();
  try {
    group_->MaybeCheck(step + 1, /*agreed=*/true, planned_last || res.stop);
  } catch (const collectives::MembershipChanged& e) {
    LOG(WARNING) << e.what();
    Recover(step, /*applied=*/true, planned_last);
  }
  res.wait_s += SecondsSince(t);
  return res;
}

ExchangeResult RingExchange::Recover(int64_t step, bool applied, bool planned_last) {
  const size_t n = last_sum_.size();
  for (;;) {
    try {
      group_->Rebuild();
      const int64_t done = applied ? step + 1 : step;  // steps this worker completed
      const std::vector<int64_t> steps = group_->Gather(done);
      const int64_t behind = *std::min_element(steps.begin(), steps.end());
      const int64_t ahead = *std::max_element(steps.begin(), steps.end());
      if (ahead > behind + 1) throw std::logic_error("ring workers more than a step apart");
      ExchangeResult res;
      if (ahead > behind) {
        // Step `behind` was completed by some: the first of them hands its sum to the others
        // (everyone else adds zeros, so the bits are that worker's).
        const int source =
            static_cast<int>(std::find(steps.begin(), steps.end(), ahead) - steps.begin());
        float* flat = group_->flat();
        if (group_->position() == source) {
          std::copy(last_sum_.begin(), last_sum_.end(), flat);
        } else {
          std::fill(flat, flat + n, 0.0f);
        }
        group_->SumNow(flat, n);
        if (done == behind) {
          LOG(WARNING) << "worker " << group_->worker() << " completes step " << step + 1
                       << " with the sum worker " << group_->ids()[source] << " completed it with";
          return Apply(step, planned_last, res);
        }
      }
      if (applied) return res;  // every survivor completed this step
      LOG(WARNING) << "step " << step + 1 << " is summed again over the surviving workers";
      res.view_changed = true;
      return res;
    } catch (const collectives::MembershipChanged& e) {
      LOG(WARNING) << e.what() << " (again, while recovering)";
    }
  }
}

ExchangeResult RingExchange::Resum(int64_t step, bool planned_last) {
  // The step again, over the rebuilt ring: this worker's contribution and the lost slices it
  // computed, summed bucket by bucket as every survivor does.
  float* flat = group_->flat();
  for (size_t i = 0; i < own_.size(); ++i) flat[i] = own_[i] + adopted_[i];
  for (const Bucket& bk : hooks_->buckets()) {
    group_->SubmitSum(flat + bk.begin, static_cast<size_t>(bk.end - bk.begin));
  }
  if (scaled_) group_->SubmitSum(group_->noise_slots(), 2);  // own_ + adopted_ put them there
  ExchangeResult res;
  const auto t = Clock::now();
  try {
    group_->Drain(group_->timeout_s() * (hooks_->buckets().size() + 1));
  } catch (const collectives::MembershipChanged& e) {
    LOG(WARNING) << e.what();
    return Recover(step, /*applied=*/false, planned_last);
  }
  res.wait_s += SecondsSince(t);
  return Apply(step, planned_last, res);
}

void RingExchange::Report(TrainReport* report, int64_t steps) { group_->Report(report, steps); }

}  // namespace

std::unique_ptr<Exchange> MakeRingExchange(deeptte::DeepTTEImpl& model, const OptimizerConfig& opts,
                                           std::unique_ptr<WorkerGroup> group, double bucket_mb,
                                           Tracer* tracer, std::unique_ptr<AdaScale> adascale) {
  return std::make_unique<RingExchange>(model, opts, std::move(group), bucket_mb, tracer,
                                        std::move(adascale));
}

}  // namespace tteps
