// The flags every node program (scheduler, server, worker) takes on its own command line: how
// it finds the cluster. Everything else about the job comes from the scheduler.
#pragma once

#include <gflags/gflags.h>

#include <string>

#include "common/bootstrap.h"

DECLARE_double(timeout_s);
DECLARE_double(heartbeat_s);

namespace tteps {

NodeOptions NodeOptionsFromFlags();
// With --logs: this process's log goes to its file there (common/log_file.h).
void StartLogFile(const std::string& role);

}  // namespace tteps
