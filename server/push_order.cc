#include "server/push_order.h"

#include <algorithm>

namespace tteps::server {

PushOrder::PushOrder(int num_workers, size_t max_held)
    : pushes_(static_cast<size_t>(std::max(num_workers, 0))), max_held_(max_held) {}

bool PushOrder::AddPush(int worker, Message m) {
  if (held_ >= max_held_) return false;
  Kept k;
  k.arrival = arrivals_++;
  k.worker = worker;
  k.m = std::move(m);
  pushes_.at(static_cast<size_t>(worker)).push_back(std::move(k));
  ++held_;
  return true;
}

bool PushOrder::AddOrder(uint64_t seq, int worker, int64_t count) {
  if (seq != next_seq_ || worker < 0 || static_cast<size_t>(worker) >= pushes_.size() ||
      orders_.size() >= 16 * max_held_) {
    return false;
  }
  ++next_seq_;
  orders_.push_back({worker, count});
  return true;
}

void PushOrder::PopFront() {
  if (!orders_.empty()) orders_.pop_front();
}

Message PushOrder::PopPush(int worker) {
  auto& q = pushes_.at(static_cast<size_t>(worker));
  Message m = std::move(q.front().m);
  q.pop_front();
  --held_;
  return m;
}

void PushOrder::Restart() {
  orders_.clear();
  next_seq_ = 0;
}

std::vector<std::pair<int, Message>> PushOrder::TakeAll() {
  std::vector<std::pair<uint64_t, Kept*>> all;  // arrival, what arrived
  for (size_t w = 0; w < pushes_.size(); ++w) {
    for (Kept& k : pushes_[w]) all.emplace_back(k.arrival, &k);
  }
  std::sort(all.begin(), all.end());
  std::vector<std::pair<int, Message>> out;
  out.reserve(all.size());
  for (const auto& a : all) {
    const int w = a.second->worker;
    out.emplace_back(w, std::move(a.second->m));
  }
  for (auto& q : pushes_) q.clear();
  orders_.clear();
  held_ = 0;
  return out;
}

}  // namespace tteps::server
