#include "common/version.h"

#include "common/file_formats.h"

namespace tteps {

extern const char* const kBuildCommit;  // written by cmake/commit_id.cmake at every build

const char* ReleaseVersion() { return TTEPS_VERSION; }

const char* BuildCommit() { return kBuildCommit; }

std::string VersionLine(const std::string& program) {
  return program + " " + ReleaseVersion() + " (commit " + BuildCommit() + "; wire protocol " +
         std::to_string(kProtocolVersion) + ", model.pt " + std::to_string(kModelFileFormat) +
         ", trip store " + std::to_string(kTripStoreFormat) + ", checkpoint " +
         std::to_string(kCheckpointFormat) + ")";
}

}  // namespace tteps
