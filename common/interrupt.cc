#include "common/interrupt.h"

#include <signal.h>

#include <atomic>
#include <csignal>

namespace tteps {
namespace {

std::atomic<int> caught{0};
static_assert(std::atomic<int>::is_always_lock_free, "read and written in a signal handler");

void OnSignal(int sig) {
  int none = 0;
  if (!caught.compare_exchange_strong(none, sig)) {
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
