// SIGTERM and SIGINT as a request to stop, for the processes that must say how a job ended (the
// scheduler, a local worker): the signal sets a flag that their loops read, so they write
// summary.json ("status":"interrupted") and end the job instead of dying mid-write: a batch
// system's or a supervisor's SIGTERM leaves the job with a verdict.
#pragma once

#include <string>

namespace tteps {

// From now on SIGTERM and SIGINT only set the flag. A second one of either more than 2 s after
// the first ends the process at once, as the default would; one within 2 s is the same
// interrupt passed on by another sender (scancel signals every process of the job, and the
// launcher and mpirun pass it on) and is ignored. Idempotent.
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
