// tteps-worker --mode=local: a whole job in this one process, the reference every distributed
// mode must match, from the data to summary.json and the model files.
#pragma once

#include "common/job_config.h"

namespace tteps {

// Trains, saves model.pt and model_last.pt, writes summary.json and prints the result line;
// returns the exit code (128 + the signal when interrupted). Throws on failure, after writing a
// summary that says why where it can.
int RunLocal(const JobConfig& config);

}  // namespace tteps
