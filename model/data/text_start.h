// What the first bytes of a JSON-lines file say before any line is parsed: a UTF-8 byte-order
// mark is skipped, and a compressed file is named as such (a parser would fail line 1 of either
// with "improper structure" or "not valid UTF-8").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tteps::data {

// How many of the file's first bytes (`head`: at least its first 6, or all of a shorter file)
// to skip: 3 after a byte-order mark, else 0. Throws DataError naming `path` and the format if
// it is gzip, bzip2, xz or zstd.
size_t TextStart(const std::string& path, std::string_view head);

}  // namespace tteps::data
