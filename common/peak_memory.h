// The process's peak memory, for the summaries and the benchmarks.
#pragma once

namespace tteps {

// Peak resident set size of this process so far, in MB (getrusage ru_maxrss): private and
// shared pages together.
double PeakRssMb();

// The largest RssAnon (private memory: heap, stacks, private mappings) and RssFile + RssShmem
// (shared pages: mapped files such as a trip store's shards, libraries) of /proc/self/status
// seen so far, in MB. A sample is taken at each call and, once StartMemorySampler has run,
// every 100 ms in the background. 0 where /proc is missing.
struct MemoryPeaks {
  double private_mb = 0, shared_mb = 0;
};
MemoryPeaks PeakMemory();

// Starts the background sampler (once per process; later calls do nothing).
void StartMemorySampler();

}  // namespace tteps
