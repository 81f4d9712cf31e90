// Cutting a fuzzer's bytes into a message: a frame count, the frames' sizes, a header frame and
// the payload bytes, the way ReceiveMessage sees them off the wire.
#pragma once

#include <glog/logging.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tteps::fuzz {

// Layout: [frames: 1 byte, 0..3] [size of each payload frame: 4 bytes each, little-endian]
// [header length: 2 bytes] [header] [payload bytes, cut in order; missing bytes are zeros].
struct FuzzMessage {
  std::string header;
  std::vector<std::string> payloads;
};

inline FuzzMessage CutMessage(const uint8_t* data, size_t size) {
  FuzzMessage m;
  size_t at = 0;
  auto take = [&](size_t n) {
    std::string s(reinterpret_cast<const char*>(data) + std::min(at, size),
                  std::min(n, size - std::min(at, size)));
    at += n;
    s.resize(n, '\0');
    return s;
  };
  const size_t frames = size > 0 ? data[0] % 4 : 0;
  at = 1;
  std::vector<uint32_t> sizes(frames);
  for (auto& s : sizes) {
    const std::string b = take(4);
    std::memcpy(&s, b.data(), 4);
    s %= 1 << 16;  // bounded: the point is the checks, not the allocator
  }
  uint16_t header_len = 0;
  std::memcpy(&header_len, take(2).data(), 2);
  m.header = take(header_len);
  for (uint32_t s : sizes) m.payloads.push_back(take(s));
  return m;
}

// The inverse, for the seed corpus.
inline std::string JoinMessage(const FuzzMessage& m) {
  std::string out(1, static_cast<char>(m.payloads.size()));
  for (const auto& p : m.payloads) {
    const uint32_t s = static_cast<uint32_t>(p.size());
    out.append(reinterpret_cast<const char*>(&s), 4);
  }
  const uint16_t h = static_cast<uint16_t>(m.header.size());
  out.append(reinterpret_cast<const char*>(&h), 2);
  out += m.header;
  for (const auto& p : m.payloads) out += p;
  return out;
}

// Logging off: refusals are the expected outcome of almost every input.
inline void QuietLogs() {
  FLAGS_minloglevel = 3;
  FLAGS_logtostderr = true;
}

}  // namespace tteps::fuzz
