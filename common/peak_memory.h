// The process's peak resident memory, for the summaries and the benchmarks.
#pragma once

namespace tteps {

// Peak resident set size of this process so far, in MB (getrusage ru_maxrss).
double PeakRssMb();

}  // namespace tteps
