// A data message's values as float32: its own floats, or its bf16 ones widened once per message
// into a buffer the server keeps.
#pragma once

#include <cstdint>
#include <vector>

#include "common/bf16.h"
#include "common/transport.h"

namespace tteps::server {

class WireValues {
 public:
  const float* Of(const Message& m) {
    if (m.header.wire == WireType::kF32) return m.floats(0);
    const size_t n = m.payloads[0].size() / sizeof(uint16_t);
    if (decoded_for_ != &m) {
      decoded_.resize(n);
      FromBf16(static_cast<const uint16_t*>(m.payloads[0].data()), n, decoded_.data());
      decoded_for_ = &m;
    }
    return decoded_.data();
  }
  // A new message may live at the address of the one decoded last.
  void Forget() { decoded_for_ = nullptr; }

 private:
  std::vector<float> decoded_;
  const Message* decoded_for_ = nullptr;
};

}  // namespace tteps::server
