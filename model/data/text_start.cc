#include "model/data/text_start.h"

#include "model/data/data_error.h"

namespace tteps::data {

size_t TextStart(const std::string& path, std::string_view head) {
  const auto starts = [&](std::string_view magic) { return head.substr(0, magic.size()) == magic; };
  const char* format = starts("\x1f\x8b") ? "gzip"
                       : starts("BZh")    ? "bzip2"
                       : starts(std::string_view("\xfd"
                                                 "7zXZ\0",
                                                 6))
                           ? "xz"
                       : starts("\x28\xb5\x2f\xfd") ? "zstd"
                                                    : nullptr;
  if (format != nullptr) {
    throw DataError("data file '" + path + "' is " + format +
                    "-compressed; tteps reads JSON-lines text: decompress it first");
  }
  return starts("\xef\xbb\xbf") ? 3 : 0;
}

}  // namespace tteps::data
