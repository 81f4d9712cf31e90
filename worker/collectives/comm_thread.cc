#include "worker/collectives/comm_thread.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "common/clock.h"

namespace tteps::collectives {

CommThread::CommThread() : thread_([this] { Loop(); }) {}

CommThread::~CommThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void CommThread::Submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void CommThread::Drain(double timeout_s, const BusySeen& busy_seen) {
  const auto start = Clock::now();
  const auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  const auto done = [this] { return error_ || (queue_.empty() && running_ == 0); };
  std::unique_lock<std::mutex> lock(mu_);
  bool drained = cv_.wait_until(lock, start + timeout, done);
  // Another worker computing keeps the collectives waiting: so does this wait, re-checked often.
  while (!drained && busy_seen) {
    const auto until = BusyDeadline(start, timeout, busy_seen(-1));
    if (Clock::now() > until) break;
    drained =
        cv_.wait_until(lock, std::min(until, Clock::now() + std::chrono::milliseconds(200)), done);
  }
  if (error_) std::rethrow_exception(error_);
  if (!drained) {
    throw std::runtime_error("the communication thread did not finish its collectives within " +
                             std::to_string(timeout_s) + " s");
  }
}

void CommThread::Recover(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                    [this] { return queue_.empty() && running_ == 0; })) {
    throw std::runtime_error("the communication thread's failed collective did not end within " +
                             std::to_string(timeout_s) + " s");
  }
  error_ = nullptr;
}

double CommThread::TakeBusySeconds() {
  std::lock_guard<std::mutex> lock(mu_);
  const double s = busy_s_;
  busy_s_ = 0;
  return s;
}

void CommThread::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto job = std::move(queue_.front());
    queue_.pop_front();
    if (error_) {  // after a failure the rest of the step cannot complete
      cv_.notify_all();
      continue;
    }
    running_ = 1;
    lock.unlock();
    const auto start = Clock::now();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_s_ += std::chrono::duration<double>(Clock::now() - start).count();
    running_ = 0;
    if (error && !error_) error_ = error;
    cv_.notify_all();
  }
}

}  // namespace tteps::collectives
