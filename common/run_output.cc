#include "common/run_output.h"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace tteps {

RunOutput::RunOutput(const std::string& dir) : dir_(dir), lock_(dir) {
  metrics_.open(Path("metrics.jsonl"), std::ios::out | std::ios::trunc);
  if (!metrics_) throw std::runtime_error("cannot write " + Path("metrics.jsonl"));
}

void RunOutput::AppendLine(const std::string& json) {
  metrics_ << json << '\n';
  metrics_.flush();
  if (!metrics_) throw std::runtime_error("write failed: " + Path("metrics.jsonl"));
}

void RunOutput::WriteSummary(const JsonObject& summary) {
  WriteFileAtomically(Path("summary.json"), summary.str() + "\n");
}

void WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::out | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("write failed: " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

}  // namespace tteps
