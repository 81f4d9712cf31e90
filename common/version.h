// The release every program reports with --version: the semantic version (VERSION at the top of
// the source tree), the commit it was built from, and the format versions it reads and writes.
#pragma once

#include <string>

namespace tteps {

const char* ReleaseVersion();  // "1.0.0"
const char* BuildCommit();     // git's short hash, "-dirty" with uncommitted changes, or "unknown"
// "PROGRAM 1.0.0 (commit C; wire protocol 18, model.pt 1, trip store 1, checkpoint 1)".
std::string VersionLine(const std::string& program);

}  // namespace tteps
