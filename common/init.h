// Program start-up shared by every tteps binary: flags, logging and the effective configuration.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tteps {

// Parses flags (gflags), starts glog (to stderr unless --log_dir is given) and logs the
// effective configuration once. `--help` lists only the flags defined in tteps' own sources;
// `--helpfull` lists every flag, glog's included.
void InitProgram(int* argc, char*** argv, const char* usage);

// One line "name=value ..." holding every tteps flag and its current value.
std::string EffectiveConfig();

// Every tteps flag of this program with its current value (the scheduler sends these to all
// nodes in the cluster map, so that the job has one configuration).
std::vector<std::pair<std::string, std::string>> FlagValues();
// Sets the given flags that this program defines and that its own command line did not set
// (a node's explicit flag wins over the job's). Logs the effective configuration again.
void ApplyJobFlags(const std::vector<std::pair<std::string, std::string>>& flags);

}  // namespace tteps
