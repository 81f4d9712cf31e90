// The --out_dir contract shared by every mode: metrics.jsonl (one JSON object per logged step
// and per evaluation), summary.json (written once, atomically) and the model file beside them.
#pragma once

#include <string>

#include "common/atomic_file.h"
#include "common/json_writer.h"
#include "common/out_dir_lock.h"

namespace tteps {

class RunOutput {
 public:
  // Creates the directory if needed and owns it while it lives (OutDirLock): throws
  // OutDirRefused if another job runs there, a finished job's summary.json is there, or it
  // cannot be created.
  explicit RunOutput(const std::string& dir);
  ~RunOutput();
  RunOutput(const RunOutput&) = delete;
  RunOutput& operator=(const RunOutput&) = delete;

  void AppendMetrics(const JsonObject& record) { AppendLine(record.str()); }
  // One JSON object per line, written at once (O_APPEND: a line is never torn by a partial
  // write). Throws std::runtime_error naming the file and the system's reason (a full disk).
  void AppendLine(const std::string& json);
  void WriteSummary(const JsonObject& summary);  // write-then-rename
  std::string Path(const std::string& file) const { return dir_ + "/" + file; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  OutDirLock lock_;
  int metrics_ = -1;
};

}  // namespace tteps
