#include "common/mode.h"

#include <stdexcept>

namespace tteps {

Mode ParseMode(const std::string& name) {
  for (Mode m :
       {Mode::kLocal, Mode::kSync, Mode::kAsync, Mode::kSsp, Mode::kRing, Mode::kAverage}) {
    if (name == ModeName(m)) return m;
  }
  throw std::invalid_argument("--mode must be local, sync, async, ssp, ring or average, not '" +
                              name + "'");
}

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kLocal:
      return "local";
    case Mode::kSync:
      return "sync";
    case Mode::kAsync:
      return "async";
    case Mode::kSsp:
      return "ssp";
    case Mode::kRing:
      return "ring";
    case Mode::kAverage:
      return "average";
  }
  return "unknown";
}

bool RunsAlone(Mode mode) { return mode == Mode::kLocal; }

bool AppliesOnArrival(Mode mode) { return mode == Mode::kAsync || mode == Mode::kSsp; }

bool StepsOnWholeBatch(Mode mode) {
  return mode == Mode::kSync || mode == Mode::kRing || mode == Mode::kLocal;
}

bool UsesServers(Mode mode) {
  return mode == Mode::kSync || mode == Mode::kAsync || mode == Mode::kSsp;
}

}  // namespace tteps
