// Where a process's log goes when it runs in a job: every line to a file of its own,
// DIR/<role>-<rank>.log, so that the console keeps the few lines a user reads. Errors still
// reach the console at once, tagged with the process that wrote them; `verbose` puts every line
// there too.
#pragma once

#include <cstdint>
#include <string>

namespace tteps {

// Refused messages come in floods when something broken or hostile talks to a port, and errors
// reach the console: log the first ten, then every thousandth (with the count so far).
inline bool LogThisRefusal(int64_t refused_so_far) {
  return refused_so_far <= 10 || refused_so_far % 1000 == 0;
}

// Call once, after InitProgram. Throws std::runtime_error if the file cannot be opened.
void LogToFile(const std::string& dir, const std::string& role, bool verbose);

}  // namespace tteps
