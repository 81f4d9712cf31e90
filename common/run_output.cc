#include "common/run_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tteps {

RunOutput::RunOutput(const std::string& dir) : dir_(dir), lock_(dir) {
  metrics_ = ::open(Path("metrics.jsonl").c_str(),
                    O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (metrics_ < 0) {
    throw std::runtime_error("cannot write " + Path("metrics.jsonl") + ": " + std::strerror(errno));
  }
}

RunOutput::~RunOutput() {
  if (metrics_ >= 0) ::close(metrics_);
}

void RunOutput::AppendLine(const std::string& json) {
  const std::string line = json + "\n";
  for (;;) {
    const ssize_t n = ::write(metrics_, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;
    if (n == static_cast<ssize_t>(line.size())) return;
    const int err = n < 0 ? errno : ENOSPC;  // a short write: the disk filled up
    if (n > 0) {  // a torn line would spoil the file for every reader: cut it off again
      const off_t end = ::lseek(metrics_, 0, SEEK_END);
      const int cut = end >= n ? ::ftruncate(metrics_, end - n) : 0;
      (void)cut;  // the error below is what matters
    }
    throw std::runtime_error("cannot write " + Path("metrics.jsonl") + ": " + std::strerror(err));
  }
}

void RunOutput::WriteSummary(const JsonObject& summary) {
  WriteFileAtomically(Path("summary.json"), summary.str() + "\n");
}

}  // namespace tteps
