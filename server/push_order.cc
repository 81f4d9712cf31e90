#include "server/push_order.h"

#include <algorithm>

namespace tteps::server {

PushOrder::PushOrder(int num_workers, size_t max_held)
    : num_workers_(num_workers), max_held_(max_held) {}

bool PushOrder::AddPush(int sender, Message m) {
  if (held_ >= max_held_) return false;
  Kept k;
  k.arrival = arrivals_++;
  k.sender = sender;
  k.m = std::move(m);
  pushes_[sender].push_back(std::move(k));
  ++held_;
  return true;
}

bool PushOrder::AddOrder(uint64_t seq, int sender, int slot, int64_t count) {
  if (seq != next_seq_ || slot < 0 || slot >= num_workers_ || orders_.size() >= 16 * max_held_) {
    return false;
  }
  ++next_seq_;
  orders_.push_back({sender, slot, count});
  return true;
}

void PushOrder::PopFront() {
  if (!orders_.empty()) orders_.pop_front();
}

bool PushOrder::HasPush(int sender) const {
  const auto it = pushes_.find(sender);
  return it != pushes_.end() && !it->second.empty();
}

Message PushOrder::PopPush(int sender) {
  auto& q = pushes_.at(sender);
  Message m = std::move(q.front().m);
  q.pop_front();
  if (q.empty()) pushes_.erase(sender);
  --held_;
  return m;
}

void PushOrder::Restart() {
  orders_.clear();
  next_seq_ = 0;
}

std::vector<std::pair<int, Message>> PushOrder::TakeAll() {
  std::vector<Kept*> all;
  for (auto& [sender, q] : pushes_) {
    for (Kept& k : q) all.push_back(&k);
  }
  std::sort(all.begin(), all.end(),
            [](const Kept* a, const Kept* b) { return a->arrival < b->arrival; });
  std::vector<std::pair<int, Message>> out;
  out.reserve(all.size());
  for (Kept* k : all) out.emplace_back(k->sender, std::move(k->m));
  pushes_.clear();
  orders_.clear();
  held_ = 0;
  return out;
}

}  // namespace tteps::server
