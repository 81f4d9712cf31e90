// SIGTERM and SIGINT as a request to stop, for the processes that must say how a job ended (the
// scheduler, a local worker): the signal sets a flag that their loops read, so they write
// summary.json ("status":"interrupted") and end the job instead of dying mid-write. A batch
// system's or a supervisor's SIGTERM used to leave the job without a verdict.
#pragma once

#include <string>

namespace tteps {

// From now on SIGTERM and SIGINT only set the flag (a second one of either ends the process at
// once, as the default would). Idempotent.
void CatchInterrupts();
// The first signal caught (SIGTERM or SIGINT), 0 if none.
int InterruptSignal();
// "SIGTERM", "SIGINT", or "signal N".
std::string SignalName(int sig);

// Thrown where a loop stops for an interrupt; `step` is the last complete step.
struct Interrupted {
  int signal = 0;
  long long step = 0;
};

}  // namespace tteps
