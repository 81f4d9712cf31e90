// Checkpoint files: RestoreCheckpoint on arbitrary bytes must restore or throw
// std::runtime_error, whatever counts the bytes declare.
#include <stdexcept>

#include "server/checkpoint.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tteps::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tteps;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (const char* name : {"momentum", "adam"}) {  // optimizer state of either kind
    OptimizerConfig opt;
    opt.name = name;
    server::Shard shard({8, 24}, server::Consistency::kSync, 2, 0, server::MakeOptimizer(opt, 16));
    try {
      server::RestoreCheckpoint(bytes, "fuzz", &shard);
    } catch (const std::runtime_error&) {
    }
  }
  return 0;
}
