#include "worker/collectives/identity_check.h"

#include <cstring>

namespace tteps::collectives {

uint64_t BitHash(const float* data, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, data + i, sizeof(bits));
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

std::vector<uint64_t> GatherHashes(Allreduce& allreduce, int rank, int size, uint64_t mine,
                                   double timeout_s) {
  constexpr int kPieces = 4;
  std::vector<float> slots(static_cast<size_t>(size) * kPieces, 0.0f);
  for (int p = 0; p < kPieces; ++p) {
    slots[rank * kPieces + p] = static_cast<float>((mine >> (16 * p)) & 0xffff);
  }
  allreduce.Sum(slots.data(), slots.size(), timeout_s);
  std::vector<uint64_t> hashes(size, 0);
  for (int r = 0; r < size; ++r) {
    for (int p = 0; p < kPieces; ++p) {
      hashes[r] |= static_cast<uint64_t>(slots[r * kPieces + p]) << (16 * p);
    }
  }
  return hashes;
}

std::vector<int> Disagreeing(const std::vector<uint64_t>& hashes) {
  std::vector<int> out;
  for (size_t r = 1; r < hashes.size(); ++r) {
    if (hashes[r] != hashes[0]) out.push_back(static_cast<int>(r));
  }
  return out;
}

}  // namespace tteps::collectives
