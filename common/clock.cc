#include "common/clock.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace tteps {

double ProcessAgeSeconds() {
  std::FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // Field 22, starttime in clock ticks since boot; fields are counted after the command name,
  // which is in parentheses and may hold spaces.
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  unsigned long long start_ticks = 0;
  int field = 2;
  for (; *p && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  if (std::sscanf(p, "%llu", &start_ticks) != 1) return 0;
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9 - start_ticks / ticks;
}

}  // namespace tteps
