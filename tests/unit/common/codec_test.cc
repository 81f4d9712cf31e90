// The header codec: round trips of every field, and the rejection of every kind of garbled
// header frame and of payload frames that do not match their header.
#include "common/codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/cereal_body.h"

namespace tteps {
namespace {

// Byte offsets in an encoded header. Cereal's binary archive writes the fields back to back,
// little-endian, in the order of Header::save: magic u32, version u16, type u8, role u8, then
// the other fixed-size fields, then the ranges count u32 and the ranges (2 x i64 each), the
// payload count u32 and the sizes (u64 each), the text length u32 and the text bytes. The end
// of the fixed part is taken from an encoding, so that adding a fixed field needs no edit here.
constexpr size_t kVersionOffset = 4;
constexpr size_t kTypeOffset = 6;
constexpr size_t kRoleOffset = 7;

size_t EmptyHeaderBytes() { return EncodeHeader(Header{}).size(); }
// In a header with no ranges, no payloads and no text:
size_t RangeCountOffset() { return EmptyHeaderBytes() - 12; }
size_t PayloadCountOffset() { return EmptyHeaderBytes() - 8; }
size_t TextLengthOffset() { return EmptyHeaderBytes() - 4; }

Header FullHeader() {
  Header h;
  h.type = MsgType::kPush;
  h.sender_role = Role::kServer;
  h.sender_id = -7;
  h.request_id = 0xFEDCBA9876543210ull;
  h.step = -(int64_t{1} << 40) - 3;
  h.samples = 123456789012345;
  h.fingerprint = 0x0123456789ABCDEFull;
  h.held_s = 0.1;
  h.norm = 3.75;
  h.stop = true;
  h.more = true;
  h.slice = 7;
  h.exact = true;
  h.ranges = {{0, 5}, {5, int64_t{1} << 40}, {-3, 2}};
  h.payload_bytes = {20, 0, std::numeric_limits<uint64_t>::max()};
  h.text = std::string("bin\0ary\xff\x80\n text", 16);
  h.topic = "train-report";
  return h;
}

void ExpectSameHeader(const Header& a, const Header& b) {
  EXPECT_EQ(a.magic, b.magic);
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.sender_role, b.sender_role);
  EXPECT_EQ(a.sender_id, b.sender_id);
  EXPECT_EQ(a.request_id, b.request_id);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(std::memcmp(&a.held_s, &b.held_s, sizeof(double)), 0) << a.held_s << " " << b.held_s;
  EXPECT_EQ(std::memcmp(&a.norm, &b.norm, sizeof(double)), 0) << a.norm << " " << b.norm;
  EXPECT_EQ(a.stop, b.stop);
  EXPECT_EQ(a.more, b.more);
  EXPECT_EQ(a.slice, b.slice);
  EXPECT_EQ(a.exact, b.exact);
  EXPECT_EQ(a.topic, b.topic);
  EXPECT_EQ(a.ranges.size(), b.ranges.size());
  for (size_t i = 0; i < std::min(a.ranges.size(), b.ranges.size()); ++i) {
    EXPECT_EQ(a.ranges[i].begin, b.ranges[i].begin) << i;
    EXPECT_EQ(a.ranges[i].end, b.ranges[i].end) << i;
  }
  EXPECT_EQ(a.payload_bytes, b.payload_bytes);
  EXPECT_EQ(a.text, b.text);
}

Header Decode(const std::string& bytes) { return DecodeHeader(bytes.data(), bytes.size()); }

// Runs `f`, expects a CodecError whose message contains `needle`.
template <class F>
void ExpectCodecError(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no CodecError (expected one mentioning '" << needle << "')";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' does not mention '" << needle << "'";
  }
}

void PutU32(std::string* bytes, size_t offset, uint32_t v) {
  ASSERT_LE(offset + 4, bytes->size());
  for (int i = 0; i < 4; ++i) (*bytes)[offset + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

TEST(Codec, EncodingHasTheLayoutTheCraftedBytesRelyOn) {
  Header h;
  h.version = 0x1234;
  h.type = MsgType::kPullReply;
  h.sender_role = Role::kServer;
  const std::string bytes = EncodeHeader(h);
  ASSERT_EQ(bytes.size(), EmptyHeaderBytes());
  ASSERT_GT(bytes.size(), kRoleOffset + 12);
  uint32_t magic = 0;
  std::memcpy(&magic, bytes.data(), 4);
  EXPECT_EQ(magic, kMagic);
  EXPECT_EQ(static_cast<uint8_t>(bytes[kVersionOffset]), 0x34);
  EXPECT_EQ(static_cast<uint8_t>(bytes[kVersionOffset + 1]), 0x12);
  EXPECT_EQ(static_cast<uint8_t>(bytes[kTypeOffset]), static_cast<uint8_t>(MsgType::kPullReply));
  EXPECT_EQ(static_cast<uint8_t>(bytes[kRoleOffset]), static_cast<uint8_t>(Role::kServer));
  EXPECT_EQ(bytes.substr(bytes.size() - 12), std::string(12, '\0'));  // three zero counts
  Header one;
  one.ranges = {{1, 2}};
  EXPECT_EQ(EncodeHeader(one).size(), EmptyHeaderBytes() + 16);
  Header payload;
  payload.payload_bytes = {8};
  EXPECT_EQ(EncodeHeader(payload).size(), EmptyHeaderBytes() + 8);
  Header text;
  text.text = "abc";
  EXPECT_EQ(EncodeHeader(text).size(), EmptyHeaderBytes() + 3);
}

TEST(Codec, RejectsATopicAboveTheLimit) {
  Header h;
  h.topic = std::string(kMaxTopicBytes, 't');
  EXPECT_EQ(Decode(EncodeHeader(h)).topic, h.topic);
  h.topic += "t";
  ExpectCodecError([&] { Decode(EncodeHeader(h)); }, "header topic of 65 bytes");
}

TEST(Codec, RoundTripsEveryField) {
  const Header h = FullHeader();
  ExpectSameHeader(Decode(EncodeHeader(h)), h);
}

TEST(Codec, RoundTripsDefaultsAndSpecialDoubles) {
  ExpectSameHeader(Decode(EncodeHeader(Header{})), Header{});
  for (double held : {0.0, -0.0, 1e-300, std::numeric_limits<double>::infinity(),
                      std::numeric_limits<double>::max()}) {
    Header h;
    h.held_s = held;
    h.norm = -held;
    ExpectSameHeader(Decode(EncodeHeader(h)), h);
  }
}

TEST(Codec, RoundTripsEveryTypeAndRole) {
  for (int t = 0; t < static_cast<int>(MsgType::kTypeCount); ++t) {
    for (Role r : {Role::kScheduler, Role::kServer, Role::kWorker}) {
      Header h;
      h.type = static_cast<MsgType>(t);
      h.sender_role = r;
      const Header d = Decode(EncodeHeader(h));
      EXPECT_EQ(d.type, h.type) << t;
      EXPECT_EQ(d.sender_role, r) << t;
    }
  }
}

TEST(Codec, RoundTripsTheMaximumNumberOfRangesAndPayloads) {
  Header h;
  for (size_t i = 0; i < kMaxRanges; ++i) {
    h.ranges.push_back({static_cast<int64_t>(i), static_cast<int64_t>(i + 1)});
    h.payload_bytes.push_back(4);
  }
  ExpectSameHeader(Decode(EncodeHeader(h)), h);
}

TEST(Codec, FrameOfExactlyTheLimitIsAccepted) {
  Header h;
  h.text.assign(kMaxHeaderBytes - EmptyHeaderBytes(), 'x');
  const std::string bytes = EncodeHeader(h);
  ASSERT_EQ(bytes.size(), kMaxHeaderBytes);
  EXPECT_EQ(Decode(bytes).text.size(), kMaxHeaderBytes - EmptyHeaderBytes());
}

TEST(Codec, RejectsWrongMagic) {
  std::string bytes = EncodeHeader(FullHeader());
  bytes[0] ^= 0x01;
  ExpectCodecError([&] { Decode(bytes); }, "magic");
  ExpectCodecError([&] { Decode(std::string(64, '\0')); }, "magic");
}

TEST(Codec, RejectsWrongProtocolVersion) {
  std::string bytes = EncodeHeader(FullHeader());
  bytes[kVersionOffset] = static_cast<char>(kProtocolVersion + 1);
  ExpectCodecError([&] { Decode(bytes); },
                   "protocol version " + std::to_string(kProtocolVersion + 1));
  bytes[kVersionOffset] = 0;
  ExpectCodecError([&] { Decode(bytes); }, "protocol version 0");
}

TEST(Codec, RejectsUnknownMessageType) {
  for (int t :
       {static_cast<int>(MsgType::kTypeCount), static_cast<int>(MsgType::kTypeCount) + 1, 255}) {
    std::string bytes = EncodeHeader(FullHeader());
    bytes[kTypeOffset] = static_cast<char>(t);
    ExpectCodecError([&] { Decode(bytes); }, "unknown message type " + std::to_string(t));
  }
  std::string last = EncodeHeader(FullHeader());
  last[kTypeOffset] = static_cast<char>(static_cast<int>(MsgType::kTypeCount) - 1);
  EXPECT_EQ(Decode(last).type, static_cast<MsgType>(static_cast<int>(MsgType::kTypeCount) - 1));
}

TEST(Codec, RejectsUnknownRole) {
  for (int r : {3, 4, 255}) {
    std::string bytes = EncodeHeader(FullHeader());
    bytes[kRoleOffset] = static_cast<char>(r);
    ExpectCodecError([&] { Decode(bytes); }, "unknown role " + std::to_string(r));
  }
}

TEST(Codec, RejectsEveryTruncation) {
  Header empty_text = FullHeader();
  empty_text.text.clear();
  for (const Header& h : {FullHeader(), empty_text, Header{}}) {
    const std::string bytes = EncodeHeader(h);
    for (size_t len = 0; len < bytes.size(); ++len) {
      // A copy of exactly `len` bytes, so that reading past it is caught by sanitizers too.
      const std::vector<char> prefix(bytes.begin(), bytes.begin() + len);
      EXPECT_THROW(DecodeHeader(prefix.data(), len), CodecError) << "prefix of " << len;
    }
  }
  ExpectCodecError([] { DecodeHeader(nullptr, 0); }, "truncated");
}

TEST(Codec, RejectsTrailingBytes) {
  for (const std::string& extra : {std::string(1, '\0'), std::string("xyz")}) {
    ExpectCodecError([&] { Decode(EncodeHeader(FullHeader()) + extra); }, "trailing bytes");
  }
}

TEST(Codec, RejectsOversizeFrame) {
  Header h;
  h.text.assign(kMaxHeaderBytes, 'x');  // encodes to more than the limit
  const std::string bytes = EncodeHeader(h);
  ASSERT_GT(bytes.size(), kMaxHeaderBytes);
  ExpectCodecError([&] { Decode(bytes); }, "exceeds the limit");
  // Checked on the size before anything is parsed.
  const std::string garbage(kMaxHeaderBytes + 1, '\x7f');
  ExpectCodecError([&] { Decode(garbage); }, std::to_string(kMaxHeaderBytes + 1) + " bytes");
}

TEST(Codec, RejectsRangeCountAboveTheLimit) {
  for (uint32_t n : {static_cast<uint32_t>(kMaxRanges + 1), std::numeric_limits<uint32_t>::max()}) {
    std::string bytes = EncodeHeader(Header{});
    PutU32(&bytes, RangeCountOffset(), n);
    ExpectCodecError([&] { Decode(bytes); }, "declares " + std::to_string(n) + " ranges");
  }
  // At the limit the count is accepted, and the missing ranges are a truncation.
  std::string bytes = EncodeHeader(Header{});
  PutU32(&bytes, RangeCountOffset(), kMaxRanges);
  ExpectCodecError([&] { Decode(bytes); }, "truncated");
}

TEST(Codec, RejectsPayloadCountAboveTheLimit) {
  std::string bytes = EncodeHeader(Header{});
  PutU32(&bytes, PayloadCountOffset(), kMaxRanges + 1);
  ExpectCodecError([&] { Decode(bytes); },
                   "declares " + std::to_string(kMaxRanges + 1) + " payloads");
}

TEST(Codec, RejectsTextLengthAboveTheLimit) {
  std::string bytes = EncodeHeader(Header{});
  PutU32(&bytes, TextLengthOffset(), kMaxHeaderBytes + 1);
  ExpectCodecError([&] { Decode(bytes); },
                   "header text of " + std::to_string(kMaxHeaderBytes + 1) + " bytes");
  PutU32(&bytes, TextLengthOffset(), std::numeric_limits<uint32_t>::max());
  ExpectCodecError([&] { Decode(bytes); }, "header text of");
  // A plausible length whose bytes are missing is a truncation.
  PutU32(&bytes, TextLengthOffset(), 100);
  ExpectCodecError([&] { Decode(bytes); }, "truncated");
}

// ValidatePayloads

Header DataHeader(MsgType type, std::vector<KeyRange> ranges, std::vector<uint64_t> bytes) {
  Header h;
  h.type = type;
  h.ranges = std::move(ranges);
  h.payload_bytes = std::move(bytes);
  return h;
}

TEST(ValidatePayloads, AcceptsWellFormedMessages) {
  for (MsgType t : {MsgType::kPush, MsgType::kInit, MsgType::kPullReply}) {
    EXPECT_NO_THROW(ValidatePayloads(DataHeader(t, {{0, 3}}, {12}), {12}));
    // Sparse: the spans' values back to back in one frame.
    EXPECT_NO_THROW(ValidatePayloads(DataHeader(t, {{0, 3}, {10, 12}}, {20}), {20}));
    // No keys of this server touched: an empty frame, still a push that counts.
    EXPECT_NO_THROW(ValidatePayloads(DataHeader(t, {}, {0}), {0}));
  }
  // Pulls name keys and carry no payload; control messages' ranges are not checked.
  EXPECT_NO_THROW(ValidatePayloads(DataHeader(MsgType::kPull, {{0, 3}}, {}), {}));
  EXPECT_NO_THROW(ValidatePayloads(DataHeader(MsgType::kPull, {{0, 3}, {5, 6}}, {}), {}));
  EXPECT_NO_THROW(ValidatePayloads(DataHeader(MsgType::kError, {}, {}), {}));
  EXPECT_NO_THROW(ValidatePayloads(DataHeader(MsgType::kHeartbeat, {}, {}), {}));
  EXPECT_NO_THROW(ValidatePayloads(DataHeader(MsgType::kReport, {}, {5}), {5}));
}

TEST(ValidatePayloads, RejectsFrameCountMismatch) {
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPush, {{0, 1}}, {4}), {});
      },
      "push declares 1 payload frames, got 0");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPull, {{0, 1}}, {}), {4});
      },
      "pull declares 0 payload frames, got 1");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPull, {{0, 1}}, {4}), {4});
      },
      "pull with a payload");
}

TEST(ValidatePayloads, RejectsDeclaredSizeMismatch) {
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPush, {{0, 2}, {2, 3}}, {8, 8}), {8, 4});
      },
      "payload 1 declares 8 bytes, got 4");
  ExpectCodecError([] { ValidatePayloads(DataHeader(MsgType::kReport, {}, {3}), {4}); },
                   "payload 0 declares 3 bytes, got 4");
}

TEST(ValidatePayloads, RejectsDataMessageWithoutItsOneFrame) {
  ExpectCodecError([] { ValidatePayloads(DataHeader(MsgType::kPush, {}, {}), {}); },
                   "push with 0 payloads, expected 1");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPush, {{0, 1}, {1, 2}}, {4, 4}), {4, 4});
      },
      "push with 2 payloads, expected 1");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kInit, {{0, 1}}, {}), {});
      },
      "init with 0 payloads");
}

TEST(ValidatePayloads, RejectsEmptyNegativeUnsortedOrOverlappingRanges) {
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPush, {{3, 3}}, {0}), {0});
      },
      "empty key range [3, 3)");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPush, {{5, 2}}, {0}), {0});
      },
      "empty key range [5, 2)");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kInit, {{-1, 2}}, {12}), {12});
      },
      "key range [-1, 2) overlaps or precedes");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPush, {{4, 6}, {0, 2}}, {16}), {16});
      },
      "key range [0, 2) overlaps or precedes");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPullReply, {{0, 4}, {3, 6}}, {28}), {28});
      },
      "key range [3, 6) overlaps");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPull, {{2, 1}}, {}), {});
      },
      "pull: empty key range [2, 1)");
}

TEST(ValidatePayloads, RejectsPayloadNotMatchingTheRangeSize) {
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPush, {{0, 3}}, {8}), {8});
      },
      "payload has 8 bytes, its 1 key ranges need 12");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPullReply, {{0, 1}, {7, 9}}, {16}), {16});
      },
      "payload has 16 bytes, its 2 key ranges need 12");
  ExpectCodecError(
      [] {
        ValidatePayloads(DataHeader(MsgType::kPush, {{0, 1}}, {5}), {5});
      },
      "need 4");
}

TEST(ValidatePayloads, Bf16ValuesTakeTwoBytesEach) {
  Header h = DataHeader(MsgType::kPush, {{0, 3}, {10, 12}}, {10});
  h.wire = WireType::kBf16;
  EXPECT_NO_THROW(ValidatePayloads(h, {10}));
  h.payload_bytes = {20};
  ExpectCodecError([&] { ValidatePayloads(h, {20}); }, "its 2 key ranges need 10");
  // The type survives encoding; an unknown one is refused.
  EXPECT_EQ(DecodeHeader(EncodeHeader(h).data(), EncodeHeader(h).size()).wire, WireType::kBf16);
}

TEST(ValidatePayloads, RejectsHugeRangeWhoseByteCountOverflows) {
  const int64_t huge = int64_t{1} << 62;
  EXPECT_THROW(ValidatePayloads(DataHeader(MsgType::kPush, {{0, huge}}, {0}), {0}), CodecError);
  EXPECT_THROW(ValidatePayloads(DataHeader(MsgType::kPush, {{0, huge + 1}}, {4}), {4}), CodecError);
}

// Found by fuzzing: a bool is one byte, and any value but 0 or 1 was undefined behaviour later.
TEST(Codec, RejectsABoolThatIsNeitherZeroNorOne) {
  Header on;
  on.stop = true;
  const std::string off_bytes = EncodeHeader(Header{}), on_bytes = EncodeHeader(on);
  ASSERT_EQ(off_bytes.size(), on_bytes.size());
  size_t at = 0;
  while (at < off_bytes.size() && off_bytes[at] == on_bytes[at]) ++at;
  ASSERT_LT(at, off_bytes.size());
  std::string bad = on_bytes;
  bad[at] = 64;
  try {
    DecodeHeader(bad.data(), bad.size());
    ADD_FAILURE() << "a bool of 64 was accepted";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("a bool of value 64"), std::string::npos) << e.what();
  }
}

// A body that declares 2^60 elements is refused before anything is allocated.
TEST(DecodeCereal, RefusesACountBeyondTheBytesLeft) {
  std::vector<double> v = {1, 2, 3};
  std::string bytes = EncodeCereal(v);
  const uint64_t huge = uint64_t{1} << 60;
  std::memcpy(&bytes[0], &huge, sizeof huge);  // the size comes first
  try {
    DecodeCereal<std::vector<double>>(bytes);
    ADD_FAILURE() << "a count of 2^60 was accepted";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the 24 bytes left"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(DecodeCereal<std::vector<double>>(EncodeCereal(v)), v);
  EXPECT_THROW(DecodeCereal<std::vector<double>>(EncodeCereal(v) + "x"), CodecError);
}

}  // namespace
}  // namespace tteps
