// CRC-32C (Castagnoli), the trip store's checksum: the SSE 4.2 instruction where the CPU has
// it (several GB/s), a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tteps::data {

// The CRC-32C of `bytes` bytes continuing `crc` (the CRC of what came before; 0 to start).
uint32_t Crc32c(uint32_t crc, const void* data, size_t bytes);

}  // namespace tteps::data
