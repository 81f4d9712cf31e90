// Files written whole or not at all: the bytes go to PATH.tmp, are synced, and the rename puts
// them in place. A failure (a full disk, a read-only or vanished directory) throws
// std::runtime_error naming the path and the system's reason ("No space left on device"),
// removes the temporary and leaves the previous PATH as it was, where a plain write would leave
// a torn file (and LibTorch's own save an "unexpected pos" error).
#pragma once

#include <string>
#include <string_view>

namespace tteps {

void WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace tteps
