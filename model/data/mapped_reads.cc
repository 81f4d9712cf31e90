#include "model/data/mapped_reads.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "model/data/data_error.h"

namespace tteps::data {
namespace {

// A store of 10 million trips has about a hundred shards; several stores may be open.
constexpr int kMaxMappings = 4096;

// What the handler reads: plain atomics, no allocation, no lock.
struct Range {
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<bool> faulted{false};
};
static_assert(std::atomic<uintptr_t>::is_always_lock_free, "read in a signal handler");
Range g_ranges[kMaxMappings];
std::atomic<bool> g_any_fault{false};
uintptr_t g_page_size = 4096;
struct sigaction g_previous {};

// What only the readers use, under g_mu.
std::mutex g_mu;
struct Owner {
  std::string path;
  size_t bytes = 0;
  bool used = false;
};
Owner g_owners[kMaxMappings];

// Linux's mmap is a plain system call, safe in a handler (POSIX does not list it).
void OnSigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Range& r : g_ranges) {
    if (addr < r.begin.load(std::memory_order_acquire) ||
        addr >= r.end.load(std::memory_order_acquire)) {
      continue;
    }
    // The page the kernel could not fill becomes zeros: the read completes, and its reader
    // refuses what it read once it checks (ThrowIfMappedReadFailed).
    void* page = reinterpret_cast<void*>(addr & ~(g_page_size - 1));
    if (mmap(page, g_page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
        MAP_FAILED) {
      break;
    }
    r.faulted.store(true, std::memory_order_release);
    g_any_fault.store(true, std::memory_order_release);
    errno = saved_errno;
    return;
  }
  // Not a guarded read: what would have happened without this handler (glog's failure handler
  // prints a stack trace), else the default action once the faulting read runs again.
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    signal(SIGBUS, SIG_DFL);
  }
  errno = saved_errno;
}

void InstallOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &g_previous) != 0) {
      throw std::runtime_error(std::string("cannot guard mapped reads: sigaction: ") +
                               std::strerror(errno));
    }
  });
}

// "it shrank from A to B bytes", or why it could not be read.
std::string Reason(const Owner& o) {
  struct stat sb {};
  if (::stat(o.path.c_str(), &sb) != 0) {
    return std::string("it is gone (") + std::strerror(errno) + ")";
  }
  if (static_cast<size_t>(sb.st_size) < o.bytes) {
    return "it shrank from " + std::to_string(o.bytes) + " to " + std::to_string(sb.st_size) +
           " bytes (truncated or rewritten)";
  }
  return "the system could not read it (an I/O error)";
}

}  // namespace

int GuardMapping(const void* base, size_t bytes, const std::string& path) {
  InstallOnce();
  std::lock_guard<std::mutex> lock(g_mu);
  for (int i = 0; i < kMaxMappings; ++i) {
    if (g_owners[i].used) continue;
    g_owners[i] = {path, bytes, true};
    g_ranges[i].faulted.store(false);
    // begin, then end: until both are set the range is empty ([begin, 0)), never [0, end).
    g_ranges[i].begin.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
    g_ranges[i].end.store(reinterpret_cast<uintptr_t>(base) + bytes, std::memory_order_release);
    return i;
  }
  throw std::length_error("more than " + std::to_string(kMaxMappings) + " mapped files at once (" +
                          path + ")");
}

void UnguardMapping(int handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  Range& r = g_ranges[handle];
  r.end.store(0, std::memory_order_release);  // empty first, as GuardMapping fills it
  r.begin.store(0, std::memory_order_release);
  r.faulted.store(false);
  g_owners[handle] = {};
}

void ThrowIfMappedReadFailed() {
  if (!g_any_fault.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_mu);
  for (int i = 0; i < kMaxMappings; ++i) {
    if (!g_owners[i].used || !g_ranges[i].faulted.load(std::memory_order_acquire)) continue;
    throw DataError(g_owners[i].path + ": a read of it failed under the running job: " +
                    Reason(g_owners[i]) + "; nothing read from it since is used");
  }
}

}  // namespace tteps::data
