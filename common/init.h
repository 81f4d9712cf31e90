// Program start-up shared by every tteps binary: flags, logging and the effective configuration.
#pragma once

#include <string>

namespace tteps {

// Parses flags (gflags), starts glog (to stderr unless --log_dir is given) and logs the
// effective configuration once. `--help` lists only the flags defined in tteps' own sources;
// `--helpfull` lists every flag, glog's included.
void InitProgram(int* argc, char*** argv, const char* usage);

// One line "name=value ..." holding every tteps flag and its current value.
std::string EffectiveConfig();

}  // namespace tteps
