// The ring backend's promise that all workers hold bitwise-identical parameters, checked:
// every rank hashes its flat parameters and the hashes are gathered through the allreduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "worker/collectives/allreduce.h"

namespace tteps::collectives {

// FNV-1a 64 over the bits of data[0..n).
uint64_t BitHash(const float* data, size_t n);

// Every rank's `mine`, indexed by rank. Collective (all ranks of the allreduce's group call it):
// each hash travels as four 16-bit pieces, which a float sum carries exactly.
std::vector<uint64_t> GatherHashes(Allreduce& allreduce, int rank, int size, uint64_t mine,
                                   double timeout_s);

// Ranks whose hash differs from rank 0's (empty when all agree).
std::vector<int> Disagreeing(const std::vector<uint64_t>& hashes);

}  // namespace tteps::collectives
