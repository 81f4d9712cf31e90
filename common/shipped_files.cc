#include "common/shipped_files.h"

#include <filesystem>
#include <system_error>

namespace tteps {

std::string ShippedFile(const std::string& relative) {
  namespace fs = std::filesystem;
  const fs::path source = fs::path(TTEPS_SOURCE_DIR) / relative;
  std::error_code ec;
  if (fs::exists(source, ec)) return source.string();
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path().parent_path().parent_path() / relative;
    if (fs::exists(beside, ec)) return beside.string();
  }
  return source.string();
}

}  // namespace tteps
