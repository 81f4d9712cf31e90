// The --out_dir contract shared by every mode: metrics.jsonl (one JSON object per logged step
// and per evaluation), summary.json (written once, atomically) and the model file beside them.
#pragma once

#include <fstream>
#include <string>

#include "common/json_writer.h"
#include "common/out_dir_lock.h"

namespace tteps {

class RunOutput {
 public:
  // Creates the directory if needed and owns it while it lives (OutDirLock): throws
  // OutDirRefused if another job runs there, a finished job's summary.json is there, or it
  // cannot be created.
  explicit RunOutput(const std::string& dir);

  void AppendMetrics(const JsonObject& record) { AppendLine(record.str()); }
  void AppendLine(const std::string& json);      // one JSON object per line, flushed at once
  void WriteSummary(const JsonObject& summary);  // write-then-rename
  std::string Path(const std::string& file) const { return dir_ + "/" + file; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  OutDirLock lock_;
  std::ofstream metrics_;
};

// Writes text to path through a temporary file and a rename.
void WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace tteps
