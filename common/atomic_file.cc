#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace tteps {

void WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  const auto fail = [&](const std::string& what, int err, bool remove) {
    if (remove) ::unlink(tmp.c_str());
    throw std::runtime_error(what + ": " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write " + path, errno, false);
  const char* p = bytes.data();
  for (size_t left = bytes.size(); left > 0;) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      fail("cannot write " + path, err, true);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // Delayed allocation can report a full disk only here.
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("cannot write " + path, err, true);
  }
  if (::close(fd) != 0) fail("cannot write " + path, errno, true);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    fail("cannot rename " + tmp + " to " + path, errno, true);
  }
}

}  // namespace tteps
