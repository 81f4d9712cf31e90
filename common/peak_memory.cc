#include "common/peak_memory.h"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace tteps {
namespace {

std::atomic<double> peak_private{0}, peak_shared{0};

void RaiseTo(std::atomic<double>& peak, double v) {
  double seen = peak.load();
  while (v > seen && !peak.compare_exchange_weak(seen, v)) {
  }
}

void Sample() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return;
  char line[256];
  double anon_kb = 0, file_kb = 0, shmem_kb = 0;
  while (std::fgets(line, sizeof(line), f)) {
    double kb = 0;
    if (std::sscanf(line, "RssAnon: %lf", &kb) == 1) anon_kb = kb;
    if (std::sscanf(line, "RssFile: %lf", &kb) == 1) file_kb = kb;
    if (std::sscanf(line, "RssShmem: %lf", &kb) == 1) shmem_kb = kb;
  }
  std::fclose(f);
  RaiseTo(peak_private, anon_kb / 1024.0);
  RaiseTo(peak_shared, (file_kb + shmem_kb) / 1024.0);
}

}  // namespace

double PeakRssMb() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports kilobytes
}

MemoryPeaks PeakMemory() {
  Sample();
  return {peak_private.load(), peak_shared.load()};
}

void StartMemorySampler() {
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return;
  std::thread([] {
    for (;;) {
      Sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }).detach();
}

}  // namespace tteps
