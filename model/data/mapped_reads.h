// Reads of memory-mapped files that cannot be served raise SIGBUS, which kills the process: a
// store shard truncated under a running job, or a disk that fails. For the guarded mappings (the
// trip stores') a handler turns that into an error the reader names: it puts a page of zeros in
// place of the one that failed, so that the read goes on, and marks the mapping; the reader then
// calls ThrowIfMappedReadFailed before it uses what it read. Other faults keep their default.
#pragma once

#include <cstddef>
#include <string>

namespace tteps::data {

// Guards [base, base + bytes), the mapping of `path` (its size then: `bytes`). Installs the
// handler on first use. Returns a handle for UnguardMapping; throws std::length_error when too
// many mappings are guarded at once.
int GuardMapping(const void* base, size_t bytes, const std::string& path);
// Before the mapping goes (munmap).
void UnguardMapping(int handle);

// Throws DataError naming the file and the reason (it shrank from A to B bytes, or it could not
// be read) if a read of a guarded mapping failed since the process started. Cheap when none did.
void ThrowIfMappedReadFailed();

}  // namespace tteps::data
