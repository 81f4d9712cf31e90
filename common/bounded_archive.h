// A Cereal input archive for what cereal::BinaryOutputArchive writes, read from a byte span
// that it never overruns. It refuses a declared count (of a vector, string or map) larger than
// the bytes left before the container is sized, so a garbled or hostile count fails as a
// cereal::Exception instead of allocating gigabytes: a decode allocates at most the input's
// size times the largest element type (tens of bytes). Used for every message body and for
// checkpoint files.
#pragma once

#include <cereal/archives/binary.hpp>
#include <cereal/cereal.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace tteps {

class BoundedInputArchive
    : public cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision> {
 public:
  BoundedInputArchive(const void* data, size_t size)
      : InputArchive(this), next_(static_cast<const char*>(data)), left_(size) {}

  void Read(void* out, size_t n) {
    if (n > left_) {
      throw cereal::Exception("truncated: " + std::to_string(n) + " bytes wanted, " +
                              std::to_string(left_) + " left");
    }
    if (n > 0) std::memcpy(out, next_, n);
    next_ += n;
    left_ -= n;
  }
  size_t left() const { return left_; }

 private:
  const char* next_;
  size_t left_;
};

// The loads BinaryOutputArchive's saves call for: raw arithmetic values, names dropped, sizes
// as cereal::size_type, binary blocks.
template <class T>
std::enable_if_t<std::is_arithmetic<T>::value> CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar,
                                                                         T& t) {
  ar.Read(std::addressof(t), sizeof(t));
}

// A bool is one byte that must be 0 or 1: any other value would be undefined behaviour to read.
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, bool& b) {
  uint8_t byte = 0;
  ar.Read(&byte, 1);
  if (byte > 1) throw cereal::Exception("a bool of value " + std::to_string(byte));
  b = byte == 1;
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::SizeTag<T>& t) {
  cereal::size_type n = 0;
  ar.Read(&n, sizeof(n));
  // Every element takes at least one byte, so a count beyond the bytes left is a lie.
  if (n > ar.left()) {
    throw cereal::Exception("declared count " + std::to_string(n) + " exceeds the " +
                            std::to_string(ar.left()) + " bytes left");
  }
  t.size = static_cast<std::remove_reference_t<T>>(n);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::BinaryData<T>& b) {
  ar.Read(b.data, static_cast<size_t>(b.size));
}

}  // namespace tteps

CEREAL_REGISTER_ARCHIVE(tteps::BoundedInputArchive)
// Pairs the archive with the writer (what CEREAL_SETUP_ARCHIVE_TRAITS does, one way only:
// BinaryOutputArchive stays paired with cereal's own reader), for load_minimal types.
namespace cereal::traits::detail {
template <>
struct get_output_from_input<tteps::BoundedInputArchive> {
  using type = cereal::BinaryOutputArchive;
};
}  // namespace cereal::traits::detail
