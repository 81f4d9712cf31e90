// Message frames: DecodeHeader and ValidatePayloads on arbitrary frames must either accept or
// throw CodecError, and what they accept must encode back to the same header.
#include "common/codec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tteps::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tteps;
  const fuzz::FuzzMessage m = fuzz::CutMessage(data, size);
  Header h;
  try {
    h = DecodeHeader(m.header.data(), m.header.size());
    std::vector<size_t> sizes;
    for (const auto& p : m.payloads) sizes.push_back(p.size());
    ValidatePayloads(h, sizes);
  } catch (const CodecError&) {
    return 0;
  }
  const std::string again = EncodeHeader(h);
  if (EncodeHeader(DecodeHeader(again.data(), again.size())) != again) __builtin_trap();
  return 0;
}
