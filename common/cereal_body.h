// A control message's typed body: any Cereal-serializable struct, encoded into a header's text
// and back. The roles define their own bodies; this layer only moves the bytes.
#pragma once

#include <cereal/archives/binary.hpp>
#include <cereal/types/common.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>
#include <string>

#include "common/bounded_archive.h"
#include "common/codec.h"

namespace tteps {

template <class T>
std::string EncodeCereal(const T& v) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(v);
  }
  return os.str();
}

// Throws CodecError if the text is not a T (bounded: a garbled count allocates nothing).
template <class T>
T DecodeCereal(const std::string& text) {
  BoundedInputArchive ar(text.data(), text.size());
  T v;
  try {
    ar(v);
  } catch (const std::exception& e) {
    throw CodecError(std::string("garbled control message body: ") + e.what());
  }
  if (ar.left() != 0) throw CodecError("garbled control message body: trailing bytes");
  return v;
}

}  // namespace tteps
