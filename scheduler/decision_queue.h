// The decisions a policy has made and the coordination loop has not sent yet: the policy queues
// them as it observes windows, the loop's Poll takes them in order. Thread-safe.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "scheduler/accumulation_policy.h"

namespace tteps::scheduler {

class DecisionQueue {
 public:
  void Push(AlphaDecision d) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(d));
  }
  std::optional<AlphaDecision> Pop() {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return std::nullopt;
    AlphaDecision d = std::move(queue_.front());
    queue_.pop_front();
    return d;
  }

 private:
  std::mutex mu_;
  std::deque<AlphaDecision> queue_;
};

}  // namespace tteps::scheduler
