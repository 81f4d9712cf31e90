// How a job combines its workers' gradients, parsed once from --mode. The worker's exchange
// factory is the only place that switches on it.
#pragma once

#include <cstdint>
#include <string>

namespace tteps {

enum class Mode : uint8_t {
  kLocal,    // one process, no exchange: the reference
  kSync,     // parameter servers, bulk-synchronous
  kAsync,    // parameter servers, each push applied on arrival
  kSsp,      // parameter servers, bounded staleness
  kRing,     // workers only: gradient allreduce
  kAverage,  // workers only: parameter averaging
};

// Throws std::invalid_argument naming the accepted modes.
Mode ParseMode(const std::string& name);
const char* ModeName(Mode mode);
// The parameter-server modes (sync, async, ssp).
bool UsesServers(Mode mode);

// Cereal stores a mode by its name (config.json reads "sync", not 1).
template <class Archive>
std::string save_minimal(const Archive&, const Mode& mode) {
  return ModeName(mode);
}
template <class Archive>
void load_minimal(const Archive&, Mode& mode, const std::string& name) {
  mode = ParseMode(name);
}

}  // namespace tteps
