#include "common/out_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tteps {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockFile = ".tteps.lock";

std::string Holder(const std::string& lock_path) {
  std::ifstream in(lock_path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "a process that has not said which yet" : text;
}

std::string Finished(const std::string& dir) {
  const std::string summary = dir + "/summary.json";
  if (!fs::exists(summary)) return "";
  return "the output directory " + dir + " holds a finished job (" + summary +
         "); its results are not overwritten: choose another --out_dir, or remove that one";
}

// Opens and locks the lock file; -1 with *why set where another process holds it or it cannot
// be opened.
int TakeLock(const std::string& dir, std::string* why) {
  const std::string path = dir + "/" + kLockFile;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = "cannot write in the output directory " + dir + ": " + std::strerror(errno);
    return -1;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    *why = err == EWOULDBLOCK
               ? "the output directory " + dir + " is in use by a running job (" + Holder(path) +
                     "): choose another --out_dir, or wait for that job"
               : "cannot lock " + path + ": " + std::strerror(err);
    return -1;
  }
  return fd;
}

}  // namespace

OutDirLock::OutDirLock(const std::string& dir, bool allow_finished) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw OutDirRefused("cannot create the output directory " + dir + ": it is not a directory");
  }
  fs::create_directories(dir, ec);
  if (ec) throw OutDirRefused("cannot create the output directory " + dir + ": " + ec.message());
  std::string why;
  fd_ = TakeLock(dir, &why);
  if (fd_ < 0) throw OutDirRefused(why);
  // Checked under the lock: a job that finished a moment ago has released it.
  why = allow_finished ? "" : Finished(dir);
  if (!why.empty()) {
    ::close(fd_);
    throw OutDirRefused(why);
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::time_t now = std::time(nullptr);
  char when[32] = {};
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  std::ostringstream text;
  text << "pid " << ::getpid() << " on host " << host << ", since " << when << "\n";
  const std::string s = text.str();
  // Who holds it, for the refusal of a second job. Failing to say (a full disk) changes nothing
  // else: the job's own writes name the cause.
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t written = ::pwrite(fd_, s.data(), s.size(), 0);
    (void)written;
  }
}

OutDirLock::~OutDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::string OutDirProblem(const std::string& dir) {
  try {
    OutDirLock taken(dir);  // and let go at once
  } catch (const OutDirRefused& e) {
    return e.what();
  }
  return "";
}

}  // namespace tteps
