// Program start-up shared by every tteps binary: flags and logging.
#pragma once

namespace tteps {

// Parses flags (gflags) and starts glog, to stderr. `--help` lists only the flags defined in
// tteps' own sources; `--helpfull` lists every flag, glog's included; `--version` prints the
// release, the commit and the format versions (common/version.h).
void InitProgram(int* argc, char*** argv, const char* usage);

}  // namespace tteps
