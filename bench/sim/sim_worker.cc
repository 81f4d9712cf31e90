#include "bench/sim/sim_worker.h"

#include <glog/logging.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "common/clock.h"
#include "common/topics/worker_topics.h"

namespace tteps::sim {
namespace {

// Sync or async with plain SGD at a constant rate that is a power of two: the servers'
// arithmetic on the synthetic gradients is then exact, and the final weights predictable to the
// bit.
void CheckJob(const ClusterMap& map) {
  const JobConfig& c = map.config;
  const auto refuse = [](const std::string& why) {
    throw std::invalid_argument("bench/scale's simulated workers need " + why);
  };
  if (c.exchange.mode != Mode::kSync && c.exchange.mode != Mode::kAsync) {
    refuse("--mode sync or async");
  }
  if (c.optimizer.name != "sgd" || c.optimizer.lr_schedule != "constant" ||
      c.optimizer.warmup_steps != 0 || c.optimizer.lr_scaling != "none" ||
      c.optimizer.clip_norm != 0) {
    refuse("--optimizer sgd at a constant rate (no warm-up, scaling or clipping)");
  }
  int exponent = 0;
  if (std::frexp(c.optimizer.lr, &exponent) != 0.5) refuse("an --lr that is a power of two");
  if (c.train.max_steps <= 0) refuse("--max_steps (the steps of the job)");
  // Their pushes are whole (a worker's sparse rows, buckets and staged pulls are its own
  // business); the servers' arithmetic needs float32 on the wire and a trip per slice and step.
  if (c.exchange.accumulation != 1 || c.exchange.wire_dtype != "fp32") {
    refuse("--wire_dtype fp32 and --accumulation 1");
  }
  if (map.resume_version >= 0) refuse("a fresh job (no --resume)");
}

// The final weights the synthetic gradients predict, computed once per process.
const std::vector<float>& ExpectedOnce(int64_t count, int64_t version, int slices, double lr,
                                       const std::vector<KeyRange>& spans) {
  static std::once_flag once;
  static std::vector<float> expected;
  std::call_once(once, [&] { expected = Expected(count, version, slices, lr, spans); });
  return expected;
}

}  // namespace

JsonObject SimOutcome::ToJson() const {
  JsonObject o;
  o.Add("worker", id)
      .Add("slice", slice)
      .Add("first_step", first_step)
      .Add("steps", steps)
      .Add("register_s", register_s)
      .Add("go_s", go_s)
      .Add("train_s", train_s)
      .Add("adopted", adopted)
      .Add("checked_keys", checked_keys)
      .Add("mismatched_keys", mismatch.count)
      .Add("max_abs_diff", mismatch.max_abs)
      .Add("exchange_s", exchange_s);
  if (!error.empty()) o.Add("error", error);
  return o;
}

SimOutcome SimWorker::Run() {
  start_ = Clock::now();
  try {
    Register();
    Start();
    for (int64_t step = out_.first_step; step < total_; ++step) Step(step);
    Finish();
  } catch (const std::exception& e) {
    out_.error = e.what();
    LOG(ERROR) << "simulated worker " << out_.id << ": " << e.what();  // at once, not buffered
  }
  return out_;
}

void SimWorker::Register() {
  NodeInfo self;
  self.role = Role::kWorker;
  self.host = HostName();
  self.pid = static_cast<int32_t>(getpid());
  self.param_count = shared_.layout.total();
  self.fingerprint = shared_.layout.fingerprint();
  const NodeOptions& node = shared_.node;
  control_ = std::make_unique<ControlChannel>(ctx_, node.scheduler, self, node.timeout_s,
                                              node.heartbeat_s);
  map_ = control_->Register();
  out_.register_s = SecondsSince(start_);
  CheckJob(map_);
  out_.async = map_.config.exchange.mode == Mode::kAsync;
  const ClusterConfig& cluster = map_.config.cluster;
  control_->SetTiming(cluster.timeout_s, cluster.heartbeat_s, cluster.silence_s);
  commands_.Listen(control_.get(), map_);
  control_->Start();
  out_.id = map_.your_id;
  out_.slice = map_.own_slice >= 0 ? map_.own_slice : map_.your_id;
  total_ = map_.config.train.max_steps;
}

void SimWorker::Start() {
  control_->Report(topics::kReady, {0});
  control_->WaitUntil([this] { return commands_.go(); }, "the scheduler's go");
  out_.go_s = SecondsSince(start_);
  if (map_.own_slice >= 0) out_.first_step = commands_.go_step();  // a joiner
  KVClientOptions o;
  o.timeout_s = map_.config.cluster.timeout_s;
  o.abort = [this] { return control_->ShutdownRequested() || commands_.rollback_pending(); };
  o.interrupt = [this] { return commands_.Interrupting(); };
  o.lost_servers = &commands_.lost_servers();
  o.busy_seen = [this](int worker) { return control_->ComputingSeen(worker); };
  kv_ = std::make_unique<KVClient>(ctx_, map_, control_->self(), o);
  const int64_t count = shared_.layout.total();
  weights_.reset(static_cast<float*>(std::calloc(count, sizeof(float))));
  if (!weights_) throw std::bad_alloc();
  spans_ = PushedKeys(map_.ranges, shared_.key_fraction);
  if (out_.id == 0 && out_.first_step == 0) {
    std::vector<float> init(count);
    for (int64_t k = 0; k < count; ++k) init[k] = Initial(k);
    kv_->Call(KVRequest::Init(init.data(), count));
  }
  version_ = kv_->Call(KVRequest::Pull(out_.first_step, weights_.get(), spans_)).version;
}

void SimWorker::Drain(int64_t step, bool under_way) {
  const auto no_schedule = [](int, const std::string&) { return SliceSchedule(1); };
  bool paused = false;
  do {
    for (const StepCommand& c : commands_.TakeStepCommands(no_schedule)) {
      if (c.kind == StepCommand::kAdopt && adopted_.insert(c.slice).second) {
        ++out_.adopted;
        if (under_way) PushSlice(c.slice, step);  // the step's wait may be for it
      } else if (c.kind == StepCommand::kRelease) {
        releases_.push_back(c.slice);
      } else if (c.kind == StepCommand::kPause || c.kind == StepCommand::kResume) {
        paused = c.kind == StepCommand::kPause;
      }
    }
    if (paused) {
      const ClusterConfig& cluster = map_.config.cluster;
      control_->WaitUntil([this] { return commands_.StepCommandQueued(); },
                          "a worker to join (--min_workers)",
                          cluster.timeout_s + 2 * cluster.heartbeat_s + 2);
    }
  } while (paused);
}

void SimWorker::Step(int64_t step) {
  Drain(step, false);
  // A joiner takes these slices over: pushed here for every step before this one.
  for (int slice : std::exchange(releases_, {})) {
    adopted_.erase(slice);
    control_->Report(topics::kReleased, {slice, step});
  }
  control_->SetComputing(step);
  std::this_thread::sleep_for(std::chrono::duration<double>(shared_.compute_s));
  control_->SetComputing(-1);
  for (int slice : std::set<int>(adopted_)) PushSlice(slice, step);
  PushMeta meta;
  meta.version = version_;
  meta.samples = 1;
  meta.slice = map_.own_slice;  // -1: the sender's own
  KVRequest push = KVRequest::Push(GradientOf(step, out_.slice), spans_, meta);
  push.interruptible = true;
  // The last step waits for its completion only (one key); Finish pulls the weights.
  const bool last = step + 1 == total_;
  const std::vector<KeyRange> keys = last ? std::vector<KeyRange>{{0, 1}} : spans_;
  const auto sent = Clock::now();
  PullResult r = kv_->Call(std::move(push.ThenPull(step + 1, weights_.get(), {keys})));
  while (r.view_changed) {
    Drain(step, true);
    KVRequest pull = KVRequest::Pull(step + 1, weights_.get(), keys);
    pull.interruptible = true;
    r = kv_->Call(std::move(pull));
  }
  version_ = r.version;
  out_.exchange_s.push_back(SecondsSince(sent));
  out_.steps = step + 1;
  if ((step + 1) % map_.config.train.log_every == 0 || last) Report(step);
}

void SimWorker::PushSlice(int slice, int64_t step) {
  PushMeta meta;
  meta.version = version_;
  meta.samples = 1;
  meta.slice = slice;
  kv_->Call(KVRequest::Push(GradientOf(step, slice), spans_, meta));
}

void SimWorker::Report(int64_t step) {
  TrainReport r;
  r.worker = out_.id;
  r.step = step + 1;
  r.wall_s = SecondsSince(start_) - out_.go_s;
  r.trips = 1 + static_cast<int64_t>(adopted_.size());
  r.compute_s = shared_.compute_s;
  r.cpu_gemm = "simulated";
  control_->Report(topics::kTrainReport, r);
}

void SimWorker::Finish() {
  // Async: the others still push; the job's final weights are checked after it ends.
  if (!out_.async) CheckWeights();
  out_.train_s = SecondsSince(start_);
  control_->Report(topics::kDone, {total_, map_.epoch});
  control_->Flush();
  control_->WaitForShutdown();
}

void SimWorker::CheckWeights() {
  // Every key once per process (its first simulated worker to get here), the pushed keys by
  // the others.
  static std::atomic<bool> whole_checked{false};
  const bool whole = !whole_checked.exchange(true);
  const int64_t count = shared_.layout.total();
  const std::vector<KeyRange> keys =
      whole || spans_.empty() ? std::vector<KeyRange>{{0, count}} : spans_;
  KVRequest pull = KVRequest::Pull(total_, weights_.get(), keys);
  pull.exact = true;
  kv_->Call(std::move(pull));
  const std::vector<float>& want =
      ExpectedOnce(count, total_, SliceCount(map_), map_.config.optimizer.lr, spans_);
  out_.mismatch = Compare(weights_.get(), want, keys);
  for (const KeyRange& r : keys) out_.checked_keys += r.size();
}

}  // namespace tteps::sim
