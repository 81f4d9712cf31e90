// Encoding and validation of message headers.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/message.h"

namespace tteps {

class CodecError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A message of another protocol version: a tteps of another release. Every version begins its
// header with the magic and the version (common/message.h), so the sender's version is known and
// each side can name the other's.
class ProtocolVersionError : public CodecError {
 public:
  explicit ProtocolVersionError(uint16_t version);
  uint16_t version() const { return version_; }

 private:
  uint16_t version_;
};

std::string EncodeHeader(const Header& header);

// Decodes and validates a header frame: size bound, magic, protocol version, known type and
// role, bounded vectors. Throws CodecError saying what is wrong.
Header DecodeHeader(const void* data, size_t size);

// Checks a decoded header against the payload frames that came with it: one frame per
// declared size, sizes matching; the key ranges of data messages (init, push, pull, pull reply)
// sorted, disjoint and non-empty, and for those with values exactly one frame holding every
// range's floats back to back. Throws CodecError.
void ValidatePayloads(const Header& header, const std::vector<size_t>& frame_sizes);

}  // namespace tteps
