#include "common/init.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "common/peak_memory.h"
#include "common/version.h"

namespace tteps {
namespace {

// Flags defined in this project's sources (as opposed to glog's and gflags' own).
std::vector<gflags::CommandLineFlagInfo> OwnFlags() {
  std::vector<gflags::CommandLineFlagInfo> all, own;
  gflags::GetAllFlags(&all);
  const std::string root = TTEPS_SOURCE_DIR;
  for (auto& f : all) {
    if (f.filename.rfind(root, 0) == 0) own.push_back(f);
  }
  return own;
}

void PrintOwnHelp(const char* program) {
  std::printf("%s\n\n", gflags::ProgramUsage());
  std::map<std::string, std::vector<gflags::CommandLineFlagInfo>> by_file;
  const std::string root = std::string(TTEPS_SOURCE_DIR) + "/";
  for (auto& f : OwnFlags()) by_file[f.filename.substr(root.size())].push_back(f);
  for (auto& [file, flags] : by_file) {
    std::printf("  Flags from %s:\n", file.c_str());
    for (auto& f : flags) {
      std::printf(
          "    --%s (%s) type: %s default: %s\n", f.name.c_str(), f.description.c_str(),
          f.type.c_str(),
          f.type == "string" ? ("\"" + f.default_value + "\"").c_str() : f.default_value.c_str());
    }
    std::printf("\n");
  }
  std::printf("  (%s --helpfull also lists the logging flags, e.g. --v and --log_dir.)\n", program);
}

}  // namespace

void InitProgram(int* argc, char*** argv, const char* usage) {
  gflags::SetUsageMessage(usage);
  // Logs go to stderr unless the user asks for files; set as a default so --log_dir still works.
  gflags::SetCommandLineOptionWithMode("logtostderr", "true", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineNonHelpFlags(argc, argv, /*remove_flags=*/true);
  const std::string path = (*argv)[0];
  const std::string name = path.substr(path.find_last_of('/') + 1);
  if (gflags::GetCommandLineFlagInfoOrDie("help").current_value == "true") {
    PrintOwnHelp(name.c_str());
    std::exit(0);
  }
  if (gflags::GetCommandLineFlagInfoOrDie("version").current_value == "true") {
    std::printf("%s\n", VersionLine(name).c_str());
    std::exit(0);
  }
  gflags::HandleCommandLineHelpFlags();
  if (!gflags::GetCommandLineFlagInfoOrDie("log_dir").current_value.empty()) {
    gflags::SetCommandLineOption("logtostderr", "false");
  }
  google::InitGoogleLogging((*argv)[0]);
  StartMemorySampler();  // every program's summary reports its peak private memory
}

}  // namespace tteps
