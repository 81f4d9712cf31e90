// The servers declared lost (--replicas 2: another server holds each one's key range). Written
// by the thread that hears the scheduler's word, read by the KV clients of other threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

namespace tteps {

class LostServers {
 public:
  void Add(int server) {
    std::lock_guard<std::mutex> lock(mu_);
    lost_.push_back(server);
    count_ = lost_.size();
  }
  // Forgets them all (a new cluster map renumbers the servers). Only for clients made after.
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    lost_.clear();
    count_ = 0;
  }
  // How many so far (cheap: polled while a KV client waits).
  size_t count() const { return count_.load(); }
  // The servers lost after the first `seen`.
  std::vector<int> Since(size_t seen) const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen < lost_.size()
               ? std::vector<int>(lost_.begin() + static_cast<long>(seen), lost_.end())
               : std::vector<int>{};
  }

 private:
  mutable std::mutex mu_;
  std::vector<int> lost_;
  std::atomic<size_t> count_{0};
};

}  // namespace tteps
