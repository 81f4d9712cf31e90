// Files written whole or not at all: the bytes go to PATH.tmp, are synced, and the rename puts
// them in place. A failure (a full disk, a read-only or vanished directory) throws
// std::runtime_error naming the path and the system's reason ("No space left on device"),
// removes the temporary and leaves the previous PATH as it was. (A model save on a full disk
// used to end in LibTorch's "unexpected pos 64 vs 0" and a torn PATH.tmp.)
#pragma once

#include <string>
#include <string_view>

namespace tteps {

void WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace tteps
