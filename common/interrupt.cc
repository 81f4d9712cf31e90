#include "common/interrupt.h"

#include <signal.h>
#include <time.h>

#include <atomic>
#include <csignal>
#include <cstdint>

namespace tteps {
namespace {

std::atomic<int> caught{0};
std::atomic<int64_t> caught_at_ns{0};
static_assert(std::atomic<int>::is_always_lock_free, "read and written in a signal handler");
static_assert(std::atomic<int64_t>::is_always_lock_free, "read and written in a signal handler");

// Signals within this long of the first are the same interrupt passed on by several senders
// (Slurm's scancel signals every process of a job, and the launcher and mpirun pass it on too).
constexpr int64_t kSameInterruptNs = 2'000'000'000;

int64_t MonotonicNs() {  // clock_gettime is async-signal-safe
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void OnSignal(int sig) {
  int none = 0;
  if (caught.compare_exchange_strong(none, sig)) {
    caught_at_ns.store(MonotonicNs());
  } else if (MonotonicNs() - caught_at_ns.load() > kSameInterruptNs) {
    // A second interrupt: the user insists, or the process is stuck.
    std::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}

}  // namespace

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

int InterruptSignal() { return caught.load(); }

std::string SignalName(int sig) {
  if (sig == SIGTERM) return "SIGTERM";
  if (sig == SIGINT) return "SIGINT";
  return "signal " + std::to_string(sig);
}

}  // namespace tteps
