#include "common/log_file.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>

namespace tteps {
namespace {

class FileSink : public google::LogSink {
 public:
  FileSink(std::FILE* file, std::string tag, bool verbose)
      : file_(file), tag_(std::move(tag)), verbose_(verbose) {}

  void send(google::LogSeverity severity, const char* /*full_filename*/, const char* base_filename,
            int line, const google::LogMessageTime& time, const char* message,
            size_t message_len) override {
    const std::string text = ToString(severity, base_filename, line, time, message, message_len);
    std::lock_guard<std::mutex> lock(mu_);
    std::fprintf(file_, "%s\n", text.c_str());
    std::fflush(file_);
    if (verbose_) {
      std::fprintf(stderr, "[%s] %s\n", tag_.c_str(), text.c_str());
    } else if (severity >= google::GLOG_ERROR) {
      std::fprintf(stderr, "[%s] error: %.*s\n", tag_.c_str(), static_cast<int>(message_len),
                   message);
    }
  }

 private:
  std::FILE* file_;
  std::string tag_;
  bool verbose_;
  std::mutex mu_;
};

}  // namespace

void LogToFile(const std::string& dir, const std::string& role, bool verbose) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // The rank as mpirun or, launched by srun (launch/tteps --launcher srun), as Slurm gives it.
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = std::getenv("SLURM_PROCID");
  const std::string id = rank ? std::string(rank) : "pid" + std::to_string(getpid());
  const std::string path = dir + "/" + role + "-" + id + ".log";
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write the log file " + path);
  // The sink writes the file and the console; glog itself writes neither.
  gflags::SetCommandLineOption("logtostderr", "false");
  gflags::SetCommandLineOption("stderrthreshold", "4");
  for (int s = google::GLOG_INFO; s <= google::GLOG_FATAL; ++s) google::SetLogDestination(s, "");
  static FileSink* sink = nullptr;  // lives as long as the process logs
  sink = new FileSink(f, rank ? role + " rank " + rank : role, verbose);
  google::AddLogSink(sink);
}

}  // namespace tteps
