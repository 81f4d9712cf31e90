#include "server/shard.h"

#include <algorithm>
#include <stdexcept>

#include "common/numerics.h"

namespace tteps::server {

Consistency ConsistencyFor(Mode mode) {
  if (mode == Mode::kSync) return Consistency::kSync;
  if (mode == Mode::kAsync) return Consistency::kAsync;
  if (mode == Mode::kSsp) return Consistency::kSsp;
  throw std::invalid_argument(std::string("mode ") + ModeName(mode) +
                              " has no parameter servers (sync, async or ssp)");
}

Shard::Shard(KeyRange range, Consistency mode, int num_workers, int64_t staleness,
             std::unique_ptr<Optimizer> optimizer)
    : range_(range),
      mode_(mode),
      num_workers_(num_workers),
      staleness_(staleness),
      optimizer_(std::move(optimizer)),
      values_(std::make_shared<std::vector<float>>(range.size(), 0.f)),
      clocks_(num_workers, 0),
      dropped_(num_workers, false),
      grad_(range.size()) {
  rate_.base = optimizer_->lr();
  if (num_workers < 1) throw std::invalid_argument("a shard needs at least one worker");
  if (optimizer_->size() != static_cast<size_t>(range.size())) {
    throw std::invalid_argument("optimizer sized for another range");
  }
  if (mode_ == Consistency::kSync) sync_ = std::make_unique<SyncSum>(range, num_workers);
}

void Shard::set_adascale(std::unique_ptr<AdaScale> adascale) {
  if (adascale && mode_ != Consistency::kSync) {
    throw std::invalid_argument("AdaScale needs sync mode: a step of every slice");
  }
  gain_.scale = std::move(adascale);
}

void Shard::Init(const float* values) {
  if (values_.use_count() > 1) values_ = std::make_shared<std::vector<float>>(*values_);
  std::copy(values, values + range_.size(), values_->begin());
  initialized_ = true;
}

void Shard::Mean(const float* grad_sum, int64_t samples) {
  const float scale = MeanScale(samples);
  const size_t n = grad_.size();
  for (size_t i = 0; i < n; ++i) grad_[i] = grad_sum[i] * scale;
}

void Shard::Step(double global_norm) {
  if (clip_norm_ > 0) ClipByGlobalNorm(grad_.data(), grad_.size(), global_norm, clip_norm_);
  StepWith(grad_.data(), 1.0f);
}

int64_t Shard::ScheduleStep() const {
  if (mode_ == Consistency::kSync) return version_;
  // Async and SSP: the pushes so far (with trips or not, as each worker counts its steps) over
  // the workers.
  int64_t pushes = 0;
  for (int64_t c : clocks_) pushes += c;
  return pushes / num_workers_;
}

std::shared_ptr<const std::vector<float>> Shard::ValuesAt(int64_t version) const {
  if (version == version_) return values_;
  if (version == version_ - 1) return previous_;
  return nullptr;
}

void Shard::StepWith(const float* grad, float scale) {
  if (mode_ == Consistency::kSync) previous_ = values_;  // so the step below copies first
  if (values_.use_count() > 1) values_ = std::make_shared<std::vector<float>>(*values_);
  if (rate_.schedule || gain_.scale) {
    optimizer_->set_lr((rate_.schedule ? rate_.schedule(ScheduleStep()) : rate_.base) * gain_.last);
  }
  optimizer_->Step(values_->data(), grad, scale);
  ++version_;
}

// Apply sum / samples. Without clipping the optimizer scales as it reads (one pass over the
// gradient); with clipping the mean is needed first, for its norm.
void Shard::ApplySum(const float* grad_sum, int64_t samples, double mean_grad_norm) {
  if (clip_norm_ <= 0 && !gain_.scale) return StepWith(grad_sum, MeanScale(samples));
  Mean(grad_sum, samples);
  if (mode_ == Consistency::kSync) {
    awaiting_norm_ = true;  // the server fetches the global norm, then CompleteStep
    partial_sq_ = SquaredNorm(grad_.data(), grad_.size());
  } else {
    Step(mean_grad_norm);
  }
}

void Shard::CompleteStep(double global_norm) {
  if (!awaiting_norm_) throw std::invalid_argument("no step is waiting for a gradient norm");
  awaiting_norm_ = false;
  if (gain_.scale) {
    // The norm is of the mean gradient: the estimator wants the sum's.
    const double n = static_cast<double>(gain_.step_trips);
    const double gain =
        gain_.scale->Step(global_norm * global_norm * n * n, gain_.step_trips, gain_.step_noise);
    gain_.last = gain;
    GainStats& g = gain_.stats;
    g.min = g.steps == 0 ? gain : std::min(g.min, gain);
    g.max = g.steps == 0 ? gain : std::max(g.max, gain);
    g.sum += gain;
    ++g.steps;
  }
  Step(global_norm);
}

const float* Shard::Densify(const std::vector<KeyRange>& spans, const float* values) {
  if (spans.size() == 1 && spans[0] == range_) return values;
  dense_.assign(range_.size(), 0.f);
  ScatterSpans(values, spans, range_.begin, dense_.data());
  return dense_.data();
}

void Shard::CheckPush(int worker, int64_t grad_version, int64_t samples,
                      const std::vector<KeyRange>& spans, bool more) const {
  if (worker < 0 || worker >= num_workers_) {
    throw std::invalid_argument("push from unknown worker " + std::to_string(worker));
  }
  if (!initialized_) throw std::invalid_argument("push before the shard was initialised");
  if (dropped_[worker] && mode_ != Consistency::kSync) {
    throw std::invalid_argument("worker " + std::to_string(worker) +
                                " was declared lost; its pushes are refused");
  }
  if (awaiting_norm_) throw std::invalid_argument("push while the last step waits for its norm");
  // A worker whose slice of a small last batch is empty pushes zero samples: it still counts.
  if (samples < 0) throw std::invalid_argument("push with " + std::to_string(samples) + " samples");
  if (grad_version < 0 || grad_version > version_) {
    throw std::invalid_argument("push computed on version " + std::to_string(grad_version) +
                                ", the shard is at " + std::to_string(version_));
  }
  const std::string bad = CheckSpans(spans, range_);
  if (!bad.empty()) throw std::invalid_argument("push: " + bad);
  if (more && mode_ != Consistency::kSync) {
    throw std::invalid_argument("a push in parts outside sync mode");
  }
}

int64_t Shard::Push(int worker, int64_t grad_version, int64_t samples,
                    const std::vector<KeyRange>& spans, const float* grad_sum,
                    double mean_grad_norm, bool more, PieceNoise noise) {
  CheckPush(worker, grad_version, samples, spans, more);
  const int64_t staleness = version_ - grad_version;
  if (mode_ != Consistency::kSync) {
    if (clip_norm_ > 0 && !(mean_grad_norm >= 0)) {
      throw std::invalid_argument("push without its gradient norm while clipping is on");
    }
    if (samples > 0) ApplySum(Densify(spans, grad_sum), samples, mean_grad_norm);
    ++clocks_[worker];
    return staleness;
  }
  PushSync(worker, grad_version, samples, spans, grad_sum, more, noise);
  return 0;
}

void Shard::PushSync(int worker, int64_t grad_version, int64_t samples,
                     const std::vector<KeyRange>& spans, const float* grad_sum, bool more,
                     PieceNoise noise) {
  if (grad_version != version_) {
    throw std::invalid_argument("sync push for version " + std::to_string(grad_version) +
                                ", the shard is collecting version " + std::to_string(version_));
  }
  if (sync_->pushed(worker)) {
    throw std::invalid_argument("second push of worker " + std::to_string(worker) +
                                " for version " + std::to_string(version_));
  }
  const bool complete = sync_->Add(worker, samples, spans, grad_sum, more, noise);
  if (!more) ++clocks_[worker];
  if (complete) CompleteSyncStep();
}

void Shard::CompleteSyncStep() {
  const int64_t samples = sync_->samples();
  if (samples > 0) {
    if (gain_.scale) {
      gain_.step_noise = sync_->noise();
      gain_.step_trips = samples;
    }
    ApplySum(sync_->sum(), samples, -1);
  } else {
    previous_ = values_;
    ++version_;  // nothing to learn from, but the version advances for every worker alike
  }
  sync_->Reset();
}

int64_t Shard::MinClock() const {
  int64_t min = INT64_MAX;
  for (int w = 0; w < num_workers_; ++w) {
    if (!dropped_[w]) min = std::min(min, clocks_[w]);
  }
  return min;
}

void Shard::DropWorker(int worker) {
  if (worker < 0 || worker >= num_workers_) {
    throw std::invalid_argument("cannot drop unknown worker " + std::to_string(worker));
  }
  dropped_[worker] = true;
  // Sync: its slice will come from another worker; the parts of a push it did not complete
  // are dropped (a complete one counts: the other worker's copy is then refused as a second).
  if (sync_) sync_->DropParts(worker);
}

void Shard::Rejoin(int worker, int64_t clock) {
  if (worker < 0 || worker >= num_workers_ || mode_ == Consistency::kSync || clock < 0) {
    throw std::invalid_argument("worker " + std::to_string(worker) +
                                " cannot rejoin (async and SSP only, a known worker, clock >= 0)");
  }
  dropped_[worker] = false;
  clocks_[worker] = clock;
}

void Shard::RequestStop(int64_t grad_version) {
  const int64_t v = grad_version + 1;
  if (stop_version_ < 0 || v < stop_version_) stop_version_ = v;
}

bool Shard::Stopping(int64_t version) const {
  if (stop_version_ < 0) return false;
  return mode_ != Consistency::kSync || version >= stop_version_;
}

bool Shard::PullReady(int /*worker*/, int64_t want) const {
  if (!initialized_) return false;
  if (mode_ != Consistency::kSync && stop_version_ >= 0) return true;
  switch (mode_) {
    case Consistency::kSync:
      return version_ >= want;
    case Consistency::kAsync:
      return true;
    case Consistency::kSsp:
      return MinClock() >= want - staleness_;
  }
  return false;
}

std::vector<int> Shard::Blockers(int worker, int64_t want) const {
  std::vector<int> out;
  if (!initialized_ || PullReady(worker, want)) return out;
  for (int w = 0; w < num_workers_; ++w) {
    // sync: a pull more than one version ahead waits for every worker's next push too.
    const bool waiting_on = mode_ == Consistency::kSync
                                ? (want > version_ + 1 || !sync_->pushed(w))
                                : !dropped_[w] && clocks_[w] < want - staleness_;
    if (waiting_on) out.push_back(w);
  }
  return out;
}

void Shard::Restore(std::vector<float> values, int64_t version, std::vector<int64_t> clocks) {
  if (values.size() != static_cast<size_t>(range_.size()) ||
      clocks.size() != static_cast<size_t>(num_workers_)) {
    throw std::invalid_argument("checkpoint does not match the shard's range or worker count");
  }
  values_ = std::make_shared<std::vector<float>>(std::move(values));
  previous_.reset();
  version_ = version;
  clocks_ = std::move(clocks);
  initialized_ = true;
}

uint64_t Shard::StateHash() const {
  uint64_t h = 14695981039346656037ull;
  const auto mix = [&h](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  const int64_t head[] = {range_.begin, range_.end, version_, optimizer_->steps()};
  mix(head, sizeof(head));
  mix(values_->data(), values_->size() * sizeof(float));
  for (const auto& [name, buffer] : optimizer_->State()) {
    mix(name.data(), name.size());
    mix(buffer.data(), buffer.size() * sizeof(float));
  }
  if (gain_.scale) {
    const AdaScale::State a = gain_.scale->state();
    const double scale[] = {a.grad_sq, a.trace, a.weight};
    mix(scale, sizeof(scale));
  }
  return h;
}

}  // namespace tteps::server
