#include "common/peak_memory.h"

#include <sys/resource.h>

namespace tteps {

double PeakRssMb() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports kilobytes
}

}  // namespace tteps
