// The job's flags (data, model, optimizer, training, exchange, output) for the programs that
// take them: the scheduler (which sends the configuration to every node) and the worker (local
// mode, and its own overrides in a distributed job). Torch-free.
#pragma once

#include <string>

#include "common/job_config.h"

namespace tteps {

// Every field these flags describe, from their values. Mode, out_dir, the policy and the
// cluster part are the programs' own; the result is not validated yet.
JobConfig JobConfigFromFlags();
// A node's own command line wins for that node: the flags set there replace the job's values.
void ApplyOwnFlags(JobConfig* config);

// The first --train_data file if this node's command line sets the flag, else empty.
std::string OwnTrainData();

}  // namespace tteps
