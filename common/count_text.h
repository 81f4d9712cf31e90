// Counts in messages: "1 worker", "2 workers".
#pragma once

#include <cstdint>
#include <string>

namespace tteps {

// `n` and `noun`, with an s unless n is 1 (the nouns of messages are regular: worker, server,
// step, trip, record, node).
inline std::string CountOf(int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

}  // namespace tteps
