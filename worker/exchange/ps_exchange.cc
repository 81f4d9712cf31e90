// The parameter-server exchange: push the step's gradient sum and its trip count to every
// shard, pull the weights of the next step (sync: the next version; SSP: once the slowest
// worker is close enough; async: whatever the servers hold). The consistency model itself
// lives in the servers (server/shard.h); this side only says which version it waits for.
// With sparse rows (the default) a push carries the dense tensors and the embedding rows the
// step's trips used, and a pull fetches the dense tensors and the rows the next step's trips
// will read: the rows it leaves stale locally are rows that step does not touch, so training
// is exactly as with dense messages. The servers still update every row (server/shard.h).
// Sync mode with --push_bucket_mb > 0 overlaps the push with backward, as DDP's Reducer does
// for its allreduce: during the last micro-batch's backward, each gradient bucket (from the
// last tensors, which backward produces first) goes to the servers as a part of the push as
// soon as it is complete; Finish sends the rest and completes the push.
// Sync mode with --pull_overlap also overlaps the pull with the next forward pass: the pull
// asks for the model's modules one by one in the order the forward reads them, Finish returns
// once the first has arrived, and the forward awaits each of the others where it first reads
// it (DeepTTEImpl::set_block_gate), while the rest are still on the wire.
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/kv_client.h"
#include "common/numerics.h"
#include "common/trace.h"
#include "model/deeptte/deeptte.h"
#include "model/deeptte/embedding_rows.h"
#include "model/model_params.h"
#include "model/param_layout.h"
#include "worker/exchange/exchanges.h"
#include "worker/exchange/gradient_hooks.h"

namespace tteps {
namespace {

class PsExchange : public Exchange {
 public:
  PsExchange(deeptte::DeepTTEImpl& model, std::unique_ptr<KVClient> kv, PsExchangeOptions o);
  ~PsExchange() override { model_.set_block_gate({}); }
  void Start(int64_t first_step, const TableRows* rows) override;
  void BeginStep(const StepStart& s) override;
  ExchangeResult Finish(const StepEnd& e) override;
  void PushSlice(const SlicePush& p) override;
  void Settle(Weights which) override;
  void Report(TrainReport* report, int64_t steps) override;

 private:
  // Sparse rows: the keys of `rows` (null: every key).
  std::vector<KeyRange> SpansOf(const TableRows* rows) const {
    return rows_ && rows ? rows_->Spans(*rows) : std::vector<KeyRange>{};
  }
  // The step's push and the next step's pull; after a view change, the pull again.
  ExchangeResult PushPull(const StepEnd& e);
  // This step's push with the next step's pull behind it (after the planned last step: only the
  // last-step wait, if any); its result says whether the view changed while it waited.
  PullResult PushAndPull(KVRequest push, int64_t step, bool planned_last,
                         const std::vector<std::vector<KeyRange>>& stages);
  // What the own slice's push of `step` says besides its values.
  PushMeta OwnPush(const StepEnd& e, double norm) const {
    return {pulled_.version, e.trips, norm, o_.own_slice, e.pieces.sq, e.pieces.n2, stop_};
  }
  ExchangeResult Repull(int64_t step, bool planned_last);
  // grad_: a buffer no unfinished send still reads.
  void FreshGradBuffer();
  // The own slice's whole gradient in grad_ (what backward's parts left, or a copy of the
  // model's); returns the keys the push still carries (empty: every key).
  std::vector<KeyRange> TakeGradient();
  int64_t Want(int64_t step) const { return o_.wait_for_version ? step : 0; }
  // Overlap: bucket b is complete in grad_; it goes to the servers as a part of the push.
  void SendPart(int b);
  void TraceExchange(Clock::time_point begin, const PullResult& r);
  // Pull overlap: the pull by module, one stage per module holding keys to pull.
  std::vector<std::vector<KeyRange>> PullStages();
  // Blocks up to b get the pull's weights into the model: the forward is about to read block b
  // (`in_forward`: a wait for them is the forward's), or something else reads them all.
  void AwaitBlock(int b, bool in_forward);
  // Every weight of params_ into the model: nothing is left for the forward to await.
  void CopyAllIn() {
    CopyParamsIn(model_, layout_, params_.data());
    blocks_in_ = blocks_.size();
  }
  // What a push carries for the servers that clip each push: the norm of the mean gradient
  // (0 for a push without trips: an empty slice); -1 (not computed) for the others.
  double PushNorm(const std::vector<float>& grad, int64_t trips) const {
    if (!o_.send_norm) return -1;
    return trips > 0 ? std::sqrt(SquaredNorm(grad.data(), grad.size())) / trips : 0;
  }

  deeptte::DeepTTEImpl& model_;
  std::unique_ptr<KVClient> kv_;
  PsExchangeOptions o_;
  ParamLayout layout_;
  std::vector<float> params_;
  std::shared_ptr<std::vector<float>> grad_;
  std::optional<RowSpans> rows_;                   // sparse rows on
  std::vector<KeyRange> push_spans_, pull_spans_;  // empty: every key
  PullResult pulled_;
  // Overlap (sync, push_bucket_mb > 0): the gradient hooks, and the keys from `sent_from_` on
  // already sent as parts this step (released buckets are a suffix of the key space).
  std::unique_ptr<GradientHooks> hooks_;
  int64_t sent_from_ = 0;
  // Pull overlap (sync): the model's modules in forward order, each one's stage in the pull
  // in flight (-1: nothing to pull), and how many hold the weights pulled last.
  std::vector<ModuleRun> blocks_;
  std::vector<int> stage_of_;
  KVTicket staged_;  // the staged pull in flight (the forward waits for its stages)
  size_t blocks_in_ = 0;
  int64_t reported_pushed_ = 0, reported_pulled_ = 0;  // KVClient byte counts at the last report
  // The first pull is counted in the first step; later pulls in the exchange that ends a step.
  double carry_wait_ = 0, carry_pull_ = 0;
  bool stop_ = false;  // this worker voted to stop: every later push says so
  double win_push_ = 0, win_pull_ = 0, win_staleness_ = 0;
};

PsExchange::PsExchange(deeptte::DeepTTEImpl& model, std::unique_ptr<KVClient> kv,
                       PsExchangeOptions o)
    : model_(model), kv_(std::move(kv)), o_(o), layout_(LayoutOf(model)), params_(layout_.total()) {
  if (o_.sparse_rows) rows_.emplace(layout_, deeptte::EmbeddingTables());
  wants_rows_ = rows_.has_value();
  if (o_.push_bucket_mb > 0) {
    hooks_ = std::make_unique<GradientHooks>(model_, layout_,
                                             PlanBuckets(layout_, o_.push_bucket_mb * (1 << 20)),
                                             [this](int b) { SendPart(b); });
  }
  if (o_.pull_overlap) {
    blocks_ = ModuleRuns(layout_, deeptte::DeepTTEImpl::ForwardBlocks());
    if (!blocks_.empty()) model_.set_block_gate([this](int b) { AwaitBlock(b, true); });
  }
  blocks_in_ = blocks_.size();
}

std::vector<std::vector<KeyRange>> PsExchange::PullStages() {
  std::vector<std::vector<KeyRange>> stages;
  stage_of_.assign(blocks_.size(), -1);
  for (size_t b = 0; b < blocks_.size(); ++b) {
    std::vector<KeyRange> keys = pull_spans_.empty() ? std::vector<KeyRange>{blocks_[b].keys}
                                                     : ClipSpans(pull_spans_, blocks_[b].keys);
    if (keys.empty()) continue;
    stage_of_[b] = static_cast<int>(stages.size());
    stages.push_back(std::move(keys));
  }
  return stages;
}

void PsExchange::AwaitBlock(int b, bool in_forward) {
  for (; static_cast<int>(blocks_in_) <= b; ++blocks_in_) {
    const ModuleRun& run = blocks_[blocks_in_];
    if (stage_of_[blocks_in_] >= 0) {
      const auto t = Clock::now();
      kv_->Wait(staged_, static_cast<size_t>(stage_of_[blocks_in_]));
      const double waited = SecondsSince(t);
      win_pull_ += waited;
      if (in_forward) {
        forward_wait_s_ += waited;
        if (waited > 1e-4) TraceSince(o_.tracer, "pull (forward waits)", t);
      }
    }
    CopyParamsIn(model_, layout_, params_.data(), run.first, run.end);
  }
}

void PsExchange::BeginStep(const StepStart& s) {
  push_spans_ = SpansOf(s.rows);
  if (!hooks_) return;
  FreshGradBuffer();
  sent_from_ = layout_.total();
  hooks_->Arm(grad_->data());
}

void PsExchange::SendPart(int b) {
  // Buckets completed by Finish go with its push; so does the bucket holding key 0 (the last one
  // backward completes), so that push is never empty.
  if (!hooks_->armed() || b + 1 == static_cast<int>(hooks_->buckets().size())) return;
  const auto t = Clock::now();
  const Bucket& bk = hooks_->buckets()[b];
  const KeyRange keys{bk.begin, bk.end};
  const std::vector<KeyRange> spans =
      push_spans_.empty() ? std::vector<KeyRange>{keys} : ClipSpans(push_spans_, keys);
  if (!spans.empty()) kv_->PushPart(grad_, spans, pulled_.version);
  sent_from_ = std::min(sent_from_, bk.begin);
  TraceSince(o_.tracer, "push part", t);  // inside backward: copying and queueing a bucket
}

void PsExchange::Start(int64_t first_step, const TableRows* rows) {
  // Worker 0 gives a fresh job its initial weights (the servers hold pulls until then).
  if (o_.worker == 0 && first_step == 0) {
    CopyParamsOut(model_, layout_, params_.data());
    kv_->Call(KVRequest::Init(params_.data(), layout_.total()));
  }
  pull_spans_ = SpansOf(rows);
  const auto t = Clock::now();
  pulled_ = kv_->Call(KVRequest::Pull(Want(first_step), params_.data(), pull_spans_));
  carry_wait_ = pulled_.held_s;
  carry_pull_ = std::max(0.0, SecondsSince(t) - pulled_.held_s);
  CopyAllIn();
}

// The exchange of a step on the timeline, in pieces that do not overlap: the push until every
// server acknowledged it, the time a server held the pull for other workers (wait), then the
// rest of the pull.
void PsExchange::TraceExchange(Clock::time_point begin, const PullResult& r) {
  Tracer* tr = o_.tracer;
  if (!tr) return;
  const auto end = Clock::now();
  const auto at = [&](double s) {
    return std::min(
        end, begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)));
  };
  tr->Span("push", begin, at(r.push_s));
  if (end <= at(r.push_s)) return;
  if (r.held_s > 0) tr->Span("wait", at(r.push_s), at(r.push_s + r.held_s));
  if (end > at(r.push_s + r.held_s)) tr->Span("pull", at(r.push_s + r.held_s), end);
}

void PsExchange::Settle(Weights which) {
  if (which == Weights::kExact) {
    // Dense, of exactly the version held (the staged pull in flight, if any, is read first): a
    // server that completed the step already (the lost worker's push reached it, not the
    // others) sends the version before, which it keeps, so the slice is computed on one version.
    const auto t = Clock::now();
    KVRequest exact = KVRequest::Pull(pulled_.version, params_.data());
    exact.exact = true;
    kv_->Call(std::move(exact));
    CopyAllIn();
    win_pull_ += SecondsSince(t);
    return;
  }
  if (!blocks_.empty()) AwaitBlock(static_cast<int>(blocks_.size()) - 1, false);
}

ExchangeResult PsExchange::Finish(const StepEnd& e) {
  if (!e.planned_last) pull_spans_ = SpansOf(e.next_rows);
  if (e.again) return Repull(e.step, e.planned_last);
  return PushPull(e);
}

ExchangeResult PsExchange::PushPull(const StepEnd& e) {
  const int64_t step = e.step, trips = e.trips;
  const bool planned_last = e.planned_last;
  ExchangeResult res;
  // A forward pass reads every module, so this is left only to a step without trips.
  Settle(Weights::kFetched);
  auto t = Clock::now();
  const std::vector<KeyRange> push_spans = TakeGradient();
  const double norm = PushNorm(*grad_, trips);
  res.compute_s = SecondsSince(t);
  if (e.stop_vote) stop_ = true;
  const PushMeta meta = OwnPush(e, norm);

  // Push this step's gradient and pull the next step's weights in one exchange: the pull goes
  // out right behind the push instead of after its acknowledgement.
  t = Clock::now();
  PullResult next;
  std::vector<std::vector<KeyRange>> stages;
  if (!planned_last && !blocks_.empty()) stages = PullStages();
  next = PushAndPull(KVRequest::Push(grad_, push_spans, meta), step, planned_last, stages);
  if (next.view_changed) {
    LOG(INFO) << "the wait for step " << step + 1 << " ends: the view changed";
    win_push_ += SecondsSince(t);
    res = {};
    res.view_changed = true;
    return res;
  }
  if (planned_last) next.version = pulled_.version;  // the weights are still those of `step`
  const double exchange = SecondsSince(t);
  TraceExchange(t, next);
  // Updates by other workers between the version this gradient was computed on and the one
  // pulled next (0 in sync mode).
  if (!planned_last) win_staleness_ += std::max<int64_t>(0, next.version - pulled_.version - 1);
  win_push_ += next.push_s;
  win_pull_ += carry_pull_ + std::max(0.0, exchange - next.push_s - next.held_s);
  res.wait_s = carry_wait_ + next.held_s;
  carry_wait_ = carry_pull_ = 0;
  pulled_ = next;
  // The servers say the time budget ends training with this step, for every worker alike.
  res.stop = next.stop && !planned_last;
  if (!planned_last && stages.empty()) {
    t = Clock::now();
    CopyParamsIn(model_, layout_, params_.data());
    res.compute_s += SecondsSince(t);
  }
  return res;
}

PullResult PsExchange::PushAndPull(KVRequest push, int64_t step, bool planned_last,
                                   const std::vector<std::vector<KeyRange>>& stages) {
  const auto t = Clock::now();
  // The wait for the next weights ends when the view changes (a slice to adopt, a pause).
  push.interruptible = true;
  if (planned_last && o_.last_step_waits) {
    // Sync, where a worker may be lost: the last step waits for its completion (one key),
    // which a lost worker's slice pushed from here may be needed for.
    return kv_->Call(std::move(push.ThenPull(step + 1, params_.data(), {{{0, 1}}})));
  }
  if (planned_last) {
    kv_->Call(std::move(push));
    PullResult pushed;
    pushed.push_s = SecondsSince(t);
    return pushed;
  }
  if (!stages.empty()) {
    // Returns with the first module's weights; the forward awaits the others (AwaitBlock).
    staged_ = kv_->Send(std::move(push.ThenPull(Want(step + 1), params_.data(), stages)));
    const PullResult first = kv_->Wait(staged_, 0);
    if (!first.view_changed) blocks_in_ = 0;
    return first;
  }
  return kv_->Call(std::move(push.ThenPull(Want(step + 1), params_.data(), {pull_spans_})));
}

void PsExchange::FreshGradBuffer() {
  // A buffer still referenced by an unfinished zero-copy send is left to it; take a new one.
  if (!grad_ || grad_.use_count() > 1)
    grad_ = std::make_shared<std::vector<float>>(layout_.total());
}

std::vector<KeyRange> PsExchange::TakeGradient() {
  if (!hooks_ || !hooks_->armed()) {
    FreshGradBuffer();
    CopyGradsOut(model_, layout_, grad_->data());
    return push_spans_;
  }
  hooks_->Finish();  // grad_ now holds the whole gradient
  if (sent_from_ >= layout_.total()) return push_spans_;
  // What the parts sent during backward did not carry.
  std::vector<KeyRange> rest =
      ClipSpans(push_spans_.empty() ? std::vector<KeyRange>{{0, layout_.total()}} : push_spans_,
                {0, sent_from_});
  // The push completes the parts even with nothing left in it, but an empty span list would
  // mean every key: send key 0 then (never in a part; its gradient, zero or not).
  if (rest.empty()) rest = {{0, 1}};
  return rest;
}

void PsExchange::PushSlice(const SlicePush& p) {
  // Dense: the keys of the slice's rows are summed like a sparse push's, the others add zeros.
  auto grad = std::make_shared<std::vector<float>>(layout_.total());
  CopyGradsOut(model_, layout_, grad->data());
  const double norm = PushNorm(*grad, p.trips);
  const auto t = Clock::now();
  kv_->Call(KVRequest::Push(
      grad, {}, {pulled_.version, p.trips, norm, p.slice, p.pieces.sq, p.pieces.n2, stop_}));
  win_push_ += SecondsSince(t);
  TraceSince(o_.tracer, "push (adopted slice)", t);
}

ExchangeResult PsExchange::Repull(int64_t step, bool planned_last) {
  ExchangeResult res;
  const auto t = Clock::now();
  // After the planned last step only its completion is awaited (one key).
  KVRequest pull = planned_last ? KVRequest::Pull(step + 1, params_.data(), {{0, 1}})
                                : KVRequest::Pull(Want(step + 1), params_.data(), pull_spans_);
  pull.interruptible = true;
  const PullResult next = kv_->Call(std::move(pull));
  if (next.view_changed) {
    LOG(INFO) << "the wait for step " << step + 1 << " ends again: the view changed";
    win_pull_ += SecondsSince(t);
    res.view_changed = true;
    return res;
  }
  if (planned_last) return res;
  win_pull_ += std::max(0.0, SecondsSince(t) - next.held_s);
  res.wait_s = next.held_s;
  pulled_ = next;
  res.stop = next.stop;
  CopyAllIn();
  return res;
}

void PsExchange::Report(TrainReport* report, int64_t steps) {
  const double per = steps > 0 ? 1.0 / steps : 0.0;
  report->exchange = {{"push_s", win_push_ * per},
                      {"pull_s", win_pull_ * per},
                      {"staleness", win_staleness_ * per},
                      {"push_bytes", (kv_->bytes_pushed() - reported_pushed_) * per},
                      {"pull_bytes", (kv_->bytes_pulled() - reported_pulled_) * per}};
  win_push_ = win_pull_ = win_staleness_ = 0;
  reported_pushed_ = kv_->bytes_pushed();
  reported_pulled_ = kv_->bytes_pulled();
}

}  // namespace

std::unique_ptr<Exchange> MakePsExchange(deeptte::DeepTTEImpl& model, std::unique_ptr<KVClient> kv,
                                         PsExchangeOptions o) {
  return std::make_unique<PsExchange>(model, std::move(kv), o);
}

}  // namespace tteps
