#include "common/codec.h"

#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cstdint>
#include <sstream>

#include "common/bounded_archive.h"

namespace tteps {
namespace {

// Vectors are written as a 32-bit count then the elements, so that a garbled count can be
// checked against a bound before anything is allocated.
template <class Archive, class T>
void SaveVector(Archive& ar, const std::vector<T>& v) {
  ar(static_cast<uint32_t>(v.size()));
  for (const auto& x : v) ar(x);
}

template <class Archive, class T>
void LoadVector(Archive& ar, std::vector<T>* v, const char* what) {
  uint32_t n = 0;
  ar(n);
  if (n > kMaxRanges) {
    throw CodecError(std::string("header declares ") + std::to_string(n) + " " + what +
                     ", more than the limit " + std::to_string(kMaxRanges));
  }
  v->resize(n);
  for (auto& x : *v) ar(x);
}

bool IsDataMessage(MsgType t) {
  return t == MsgType::kInit || t == MsgType::kPush || t == MsgType::kPullReply;
}

}  // namespace

template <class Archive>
void SaveString(Archive& ar, const std::string& s) {
  ar(static_cast<uint32_t>(s.size()));
  ar(cereal::binary_data(s.data(), s.size()));
}

template <class Archive>
void LoadString(Archive& ar, std::string* s, size_t max, const char* what) {
  uint32_t n = 0;
  ar(n);
  if (n > max)
    throw CodecError(std::string("header ") + what + " of " + std::to_string(n) + " bytes");
  s->resize(n);
  ar(cereal::binary_data(s->data(), n));
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kScheduler:
      return "scheduler";
    case Role::kServer:
      return "server";
    case Role::kWorker:
      return "worker";
  }
  return "unknown-role";
}

const char* TypeName(MsgType type) {
  static const char* kNames[] = {"error",    "register", "cluster-map", "init",       "init-ack",
                                 "push",     "push-ack", "pull",        "pull-reply", "heartbeat",
                                 "shutdown", "trace",    "command",     "report",     "order"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(MsgType::kTypeCount));
  const auto i = static_cast<size_t>(type);
  return i < static_cast<size_t>(MsgType::kTypeCount) ? kNames[i] : "unknown-type";
}

ProtocolVersionError::ProtocolVersionError(uint16_t version)
    : CodecError("protocol version " + std::to_string(version) +
                 " (a tteps of another release); this tteps speaks version " +
                 std::to_string(kProtocolVersion) + " (docs/compatibility.md)"),
      version_(version) {}

template <class Archive>
void Header::save(Archive& ar) const {
  ar(magic, version, static_cast<uint8_t>(type), static_cast<uint8_t>(sender_role), sender_id,
     request_id, step, samples, fingerprint, held_s, norm, stop, static_cast<uint8_t>(wire), more,
     slice, exact, epoch, noise_sq, noise_n2);
  SaveString(ar, topic);
  SaveVector(ar, ranges);
  SaveVector(ar, payload_bytes);
  SaveString(ar, text);
}

template <class Archive>
void Header::load(Archive& ar) {
  uint8_t t = 0, r = 0, w = 0;
  ar(magic, version);
  if (magic != kMagic) throw CodecError("bad magic (not a tteps message)");
  if (version != kProtocolVersion) throw ProtocolVersionError(version);
  ar(t, r, sender_id, request_id, step, samples, fingerprint, held_s, norm, stop, w, more, slice,
     exact, epoch, noise_sq, noise_n2);
  if (w > static_cast<uint8_t>(WireType::kBf16)) {
    throw CodecError("unknown value type " + std::to_string(w));
  }
  wire = static_cast<WireType>(w);
  if (t >= static_cast<uint8_t>(MsgType::kTypeCount)) {
    throw CodecError("unknown message type " + std::to_string(t));
  }
  if (r > static_cast<uint8_t>(Role::kWorker))
    throw CodecError("unknown role " + std::to_string(r));
  type = static_cast<MsgType>(t);
  sender_role = static_cast<Role>(r);
  LoadString(ar, &topic, kMaxTopicBytes, "topic");
  LoadVector(ar, &ranges, "ranges");
  LoadVector(ar, &payload_bytes, "payloads");
  LoadString(ar, &text, kMaxHeaderBytes, "text");
}

std::string EncodeHeader(const Header& header) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(header);
  }
  return os.str();
}

Header DecodeHeader(const void* data, size_t size) {
  if (size > kMaxHeaderBytes) {
    throw CodecError("header frame of " + std::to_string(size) + " bytes exceeds the limit");
  }
  BoundedInputArchive ar(data, size);  // read in place, never past the frame
  Header h;
  try {
    ar(h);
  } catch (const CodecError&) {
    throw;
  } catch (const std::exception& e) {
    throw CodecError(std::string("truncated or garbled header: ") + e.what());
  }
  if (ar.left() != 0) throw CodecError("header frame has trailing bytes");
  return h;
}

void ValidatePayloads(const Header& h, const std::vector<size_t>& frame_sizes) {
  if (h.payload_bytes.size() != frame_sizes.size()) {
    throw CodecError(std::string(TypeName(h.type)) + " declares " +
                     std::to_string(h.payload_bytes.size()) + " payload frames, got " +
                     std::to_string(frame_sizes.size()));
  }
  for (size_t i = 0; i < frame_sizes.size(); ++i) {
    if (h.payload_bytes[i] != frame_sizes[i]) {
      throw CodecError("payload " + std::to_string(i) + " declares " +
                       std::to_string(h.payload_bytes[i]) + " bytes, got " +
                       std::to_string(frame_sizes[i]));
    }
  }
  if (h.type == MsgType::kPull && !frame_sizes.empty()) throw CodecError("pull with a payload");
  if (!IsDataMessage(h.type) && h.type != MsgType::kPull) return;
  const std::string bad = CheckSpans(h.ranges, KeyRange{0, INT64_MAX});
  if (!bad.empty()) throw CodecError(std::string(TypeName(h.type)) + ": " + bad);
  if (!IsDataMessage(h.type)) return;
  // The values of all ranges, back to back, in one frame (empty when a sparse push or pull
  // touches none of a server's keys: it still counts in the server's step). Compared in floats, not
  // bytes: a huge range must not wrap around into a match.
  if (frame_sizes.size() != 1) {
    throw CodecError(std::string(TypeName(h.type)) + " with " + std::to_string(frame_sizes.size()) +
                     " payloads, expected 1");
  }
  const uint64_t keys = static_cast<uint64_t>(SpanKeys(h.ranges));
  const size_t each = WireBytes(h.wire);
  if (frame_sizes[0] % each != 0 || frame_sizes[0] / each != keys) {
    throw CodecError("payload has " + std::to_string(frame_sizes[0]) + " bytes, its " +
                     std::to_string(h.ranges.size()) + " key ranges need " +
                     std::to_string(keys * each));
  }
}

}  // namespace tteps
