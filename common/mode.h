// How a job combines its workers' gradients, parsed once from --mode. What each role asks of it
// is answered in one place per role: here (what every role shares), the workers' exchange
// factory (worker/exchange/make_exchange.h), the servers' consistency (server/shard.h) and the
// scheduler's job mode (scheduler/job_mode.h).
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
// The mode runs in one process, without a scheduler (local).
bool RunsAlone(Mode mode);
// The parameter-server modes (sync, async, ssp).
bool UsesServers(Mode mode);
// The servers apply each push as it arrives (async, ssp): replicas of a range must agree on
// the order.
bool AppliesOnArrival(Mode mode);
// A step combines every slice of the global batch in one place (sync: the servers; ring: every
// worker; local: the one process), where AdaScale can measure it.
bool StepsOnWholeBatch(Mode mode);

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
