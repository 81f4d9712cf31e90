// The ring backend's communication thread: runs collectives in the order they were submitted,
// so that backward goes on computing while a gradient bucket is reduced, and so that MPI is
// entered from one thread only (MPI_THREAD_SERIALIZED). Every worker must submit the same
// collectives in the same order.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "common/busy_peers.h"

namespace tteps::collectives {

class CommThread {
 public:
  CommThread();
  // Lets the running job end (collectives are bounded by their timeout or abort check) and
  // drops the queued ones.
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  void Submit(std::function<void()> job);
  // Waits until every submitted job has run. Rethrows the first failure (jobs queued behind a
  // failed one are skipped: peers would wait for them in vain). Throws std::runtime_error if
  // the jobs take longer than timeout_s, counted from the last time another worker was seen
  // computing where `busy_seen` is given (common/busy_peers.h).
  void Drain(double timeout_s, const BusySeen& busy_seen = {});
  // After Drain threw: waits (up to timeout_s) until the jobs queued behind the failure were
  // skipped, then forgets the failure, so that new jobs run (a ring rebuilt after a loss).
  void Recover(double timeout_s);
  // Seconds spent running jobs since the last call (then reset).
  double TakeBusySeconds();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;  // 1 while a job runs
  bool stop_ = false;
  std::exception_ptr error_;
  double busy_s_ = 0;
  std::thread thread_;
};

}  // namespace tteps::collectives
