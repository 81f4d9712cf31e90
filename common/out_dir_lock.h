// Ownership of a job's output directory. A running job holds an exclusive lock on
// OUT_DIR/.tteps.lock (flock, released by the kernel when the process ends, however it ends),
// and the file names the holder; a directory with a finished job's results (summary.json) is
// not reused, so two jobs never overwrite each other's models.
#pragma once

#include <stdexcept>
#include <string>

namespace tteps {

// The output directory cannot be this job's; what() names the directory, why and the remedy.
class OutDirRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutDirLock {
 public:
  // Creates the directory if needed and takes the lock. Throws OutDirRefused: held by another
  // process (naming its pid, host and start), or summary.json there (with `allow_finished`
  // false), or the directory cannot be created or written.
  explicit OutDirLock(const std::string& dir, bool allow_finished = false);
  ~OutDirLock();
  OutDirLock(const OutDirLock&) = delete;
  OutDirLock& operator=(const OutDirLock&) = delete;

 private:
  int fd_ = -1;
};

// What OutDirLock would refuse now ("" if nothing), without keeping the lock (the directory is
// created, as the job would): the launcher's pre-flight (--check).
std::string OutDirProblem(const std::string& dir);

}  // namespace tteps
