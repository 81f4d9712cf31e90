#include "worker/exchange/worker_group.h"

#include <glog/logging.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "model/model_params.h"
#include "worker/collectives/identity_check.h"

namespace tteps {
namespace {

std::string Hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

}  // namespace

WorkerGroup::WorkerGroup(deeptte::DeepTTEImpl& model,
                         std::unique_ptr<collectives::Allreduce> allreduce, WorkerGroupOptions o,
                         std::function<bool()> shutdown)
    : model_(model),
      allreduce_(std::move(allreduce)),
      o_(std::move(o)),
      layout_(LayoutOf(model)),
      flat_(layout_.total() + kSlots),
      comm_(std::make_unique<collectives::CommThread>()) {
  shutdown_ = std::move(shutdown);
  position_ = o_.worker;
  for (int w = 0; w < o_.num_workers; ++w) ids_.push_back(w);
  SetChecks();
}

void WorkerGroup::SetChecks() {
  allreduce_->set_abort_check([this] { return stopping_.load() || (shutdown_ && shutdown_()); });
  if (o_.membership_changed) allreduce_->set_membership_check(o_.membership_changed);
  allreduce_->set_busy_seen(o_.busy_seen);
}

void WorkerGroup::Rebuild() {
  comm_->Recover(o_.timeout_s);
  RingView ring = o_.rebuild();
  const auto me = std::find(ring.ids.begin(), ring.ids.end(), o_.worker);
  if (me == ring.ids.end()) throw std::logic_error("this worker is not in its own ring");
  position_ = static_cast<int>(me - ring.ids.begin());
  allreduce_ = std::move(ring.allreduce);
  ids_ = std::move(ring.ids);
  SetChecks();
  std::string who;
  for (int id : ids_) who += (who.empty() ? "" : ", ") + std::to_string(id);
  LOG(WARNING) << "worker " << o_.worker << ": the ring is rebuilt with workers " << who;
}

std::vector<int64_t> WorkerGroup::Gather(int64_t value) {
  std::vector<float> slots(ids_.size(), 0.0f);
  slots[position_] = static_cast<float>(value);
  SumNow(slots.data(), slots.size());
  return std::vector<int64_t>(slots.begin(), slots.end());
}

WorkerGroup::~WorkerGroup() {
  // A collective still running (after a failure) gives up at once instead of at its deadline.
  stopping_ = true;
  comm_.reset();
  allreduce_->set_abort_check(nullptr);
}

std::string WorkerGroup::PeerName(int peer) const {
  if (peer >= 0 && peer < static_cast<int>(o_.worker_names.size())) return o_.worker_names[peer];
  return "worker " + std::to_string(peer);
}

void WorkerGroup::SubmitSum(float* data, size_t n) {
  comm_->Submit([this, data, n] {
    ScopedSpan span(o_.tracer, "allreduce", kCommRow);
    allreduce_->Sum(data, n, o_.timeout_s);
  });
}

void WorkerGroup::Drain(double timeout_s) {
  try {
    comm_->Drain(timeout_s, o_.busy_seen);
  } catch (const collectives::CollectiveTimeout& e) {
    throw std::runtime_error(
        std::string(e.what()) +
        (e.peer() >= 0 ? "; rank " + std::to_string(e.peer()) + " is " + PeerName(e.peer()) : ""));
  }
}

void WorkerGroup::SumNow(float* data, size_t n) {
  SubmitSum(data, n);
  Drain(o_.timeout_s + 5);
}

void WorkerGroup::Report(TrainReport* report, int64_t steps) {
  const double busy = comm_->TakeBusySeconds();
  // The ring's size (after a rebuild: the live workers), and the last step after which every
  // worker's parameters were found bitwise identical (--check_every).
  report->exchange = {{"allreduce_s", steps > 0 ? busy / steps : 0.0},
                      {"ring_size", static_cast<double>(ids_.size())}};
  if (identical_at_ >= 0) {
    report->exchange.emplace_back("identical_at", static_cast<double>(identical_at_));
  }
}

void WorkerGroup::StartFromWorker0() {
  CopyParamsOut(model_, layout_, flat_.data());
  if (position_ != 0) std::fill(flat_.begin(), flat_.end(), 0.0f);  // others contribute zeros
  SumNow(flat_.data(), layout_.total());
  CopyParamsIn(model_, layout_, flat_.data());
}

void WorkerGroup::MaybeCheck(int64_t steps, bool agreed, bool last) {
  if (steps % o_.check_every == 0) check_due_ = true;
  if (!((check_due_ && agreed) || last)) return;
  // No longer due once begun, even if given up for a lost worker (MembershipChanged): a worker
  // that leaves at a step boundary completed it, so other survivors may have too, and they run
  // none at the next step; run again here alone, its hashes would meet their next gradient
  // bucket on the rebuilt ring. The next check step compares the weights again.
  check_due_ = false;
  ScopedSpan span(o_.tracer, "check");
  CheckIdentical(steps);
}

void WorkerGroup::CheckIdentical(int64_t steps) {
  CopyParamsOut(model_, layout_, flat_.data());
  const uint64_t mine = collectives::BitHash(flat_.data(), layout_.total());
  std::vector<uint64_t> hashes;
  comm_->Submit([&] {
    hashes = collectives::GatherHashes(*allreduce_, position_, static_cast<int>(ids_.size()), mine,
                                       o_.timeout_s);
  });
  Drain(o_.timeout_s + 5);
  const auto bad = collectives::Disagreeing(hashes);
  if (bad.empty()) {
    identical_at_ = steps;
    VLOG(position_ == 0 ? 0 : 1) << "step " << steps << ": parameters bitwise identical on all "
                                 << ids_.size() << " workers (hash " << Hex(mine) << ")";
    return;
  }
  std::string who;
  for (int p : bad) {
    who += (who.empty() ? "" : ", ") + PeerName(ids_[p]) + " (" + Hex(hashes[p]) + ")";
  }
  throw std::runtime_error("the workers' parameters differ after step " + std::to_string(steps) +
                           ": " + who + " disagree with " + PeerName(ids_[0]) + " (" +
                           Hex(hashes[0]) + ")");
}

}  // namespace tteps
