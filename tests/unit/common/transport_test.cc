// The ZeroMQ transport over real sockets: round trips DEALER <-> ROUTER, zero-copy payloads,
// receive timeouts, malformed frames and unroutable peers; binding one address only.
#include "common/transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/codec.h"
#include "common/net_address.h"

namespace tteps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr long kWaitMs = 2000;  // generous bound for a message that must arrive

class TransportTest : public ::testing::Test {
 protected:
  // A ROUTER bound on tcp loopback (BindEphemeral) and a DEALER with a known routing id.
  void SetUp() override {
    endpoint_ = BindTcp(router_, "127.0.0.1");
    dealer_.set(zmq::sockopt::routing_id, std::string("dealer-7"));
    dealer_.connect(endpoint_);
  }

  zmq::context_t ctx_;
  zmq::socket_t router_ = MakeSocket(ctx_, zmq::socket_type::router);
  zmq::socket_t dealer_ = MakeSocket(ctx_, zmq::socket_type::dealer);
  std::string endpoint_;
};

Header PushHeader(uint64_t request, int64_t begin, int64_t end) {
  Header h;
  h.type = MsgType::kPush;
  h.sender_role = Role::kWorker;
  h.sender_id = 3;
  h.request_id = request;
  h.step = 11;
  h.samples = 64;
  h.fingerprint = 0xABCDEF;
  h.ranges = {{begin, end}};
  return h;
}

std::shared_ptr<std::vector<float>> Floats(size_t n, float first) {
  auto v = std::make_shared<std::vector<float>>(n);
  for (size_t i = 0; i < n; ++i) (*v)[i] = first + static_cast<float>(i) * 0.5f;
  return v;
}

void ExpectPayload(const Message& m, size_t i, const std::vector<float>& want) {
  ASSERT_LT(i, m.payloads.size());
  ASSERT_EQ(m.num_floats(i), want.size());
  for (size_t k = 0; k < want.size(); ++k) ASSERT_EQ(m.floats(i)[k], want[k]) << k;
}

TEST(BindTcp, BindsOnlyTheGivenAddressAndAdvertisesTheHost) {
  zmq::context_t ctx;
  auto s = MakeSocket(ctx, zmq::socket_type::router);
  const std::string ep = BindTcp(s, "127.0.0.1", "example.host");
  ASSERT_EQ(ep.rfind("tcp://example.host:", 0), 0u) << ep;
  const std::string port = ep.substr(ep.rfind(':') + 1);
  EXPECT_GT(std::stoi(port), 0);
  // Bound on loopback, not on every interface.
  EXPECT_EQ(s.get(zmq::sockopt::last_endpoint), "tcp://127.0.0.1:" + port);
  auto t = MakeSocket(ctx, zmq::socket_type::router);
  const std::string plain = BindTcp(t, "127.0.0.1");
  EXPECT_EQ(plain, t.get(zmq::sockopt::last_endpoint));
}

TEST(ChooseAddress, LoopbackOnOneHostAnInterfaceOrALocalAdvertisedAddress) {
  EXPECT_EQ(ChooseAddress("", "", true).bind, "127.0.0.1");
  EXPECT_EQ(ChooseAddress("", "", true).advertise, "127.0.0.1");
  EXPECT_EQ(ChooseAddress("", "lo", false).bind, "127.0.0.1");
  const NodeAddress named = ChooseAddress("localhost", "", false);
  EXPECT_EQ(named.bind, "127.0.0.1");
  EXPECT_EQ(named.advertise, "localhost");
  // An interface this host lacks, or an address that is not this host's, is refused with advice.
  try {
    ChooseAddress("", "no-such-if0", false);
    ADD_FAILURE() << "an unknown interface was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-if0: no IPv4 address"), std::string::npos);
  }
  try {
    ChooseAddress("192.0.2.77", "", false);  // TEST-NET-1: never a real host's address
    ADD_FAILURE() << "a foreign address was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not an address of this host"), std::string::npos);
  }
  // A foreign advertised address is fine when the interface to bind is named.
  EXPECT_EQ(ChooseAddress("192.0.2.77", "lo", false).advertise, "192.0.2.77");
}

TEST(MakeSocket, NeverLingers) {
  zmq::context_t ctx;
  auto s = MakeSocket(ctx, zmq::socket_type::dealer);
  EXPECT_EQ(s.get(zmq::sockopt::linger), 0);
}

TEST_F(TransportTest, DealerToRouterAndBack) {
  auto a = Floats(5, 1.0f), b = Floats(3, -2.0f);
  Header h = PushHeader(42, 10, 15);
  h.type = MsgType::kReport;  // several payload frames: only control messages carry those
  h.ranges.push_back({100, 103});
  h.text = std::string("t\0x", 3);
  ASSERT_TRUE(SendMessage(dealer_, h, {{a, a->data(), a->size()}, {b, b->data(), b->size()}}));

  Message m;
  std::string bad_peer;
  ASSERT_TRUE(ReceiveMessage(router_, /*router=*/true, kWaitMs, &m, &bad_peer));
  EXPECT_EQ(m.peer, "dealer-7");
  EXPECT_EQ(m.header.type, MsgType::kReport);
  EXPECT_EQ(m.header.sender_id, 3);
  EXPECT_EQ(m.header.request_id, 42u);
  EXPECT_EQ(m.header.step, 11);
  EXPECT_EQ(m.header.samples, 64);
  EXPECT_EQ(m.header.fingerprint, 0xABCDEFu);
  EXPECT_EQ(m.header.text, std::string("t\0x", 3));
  EXPECT_EQ(m.header.ranges, (std::vector<KeyRange>{{10, 15}, {100, 103}}));
  // SendMessage fills payload_bytes in from the payloads.
  EXPECT_EQ(m.header.payload_bytes, (std::vector<uint64_t>{20, 12}));
  ExpectPayload(m, 0, *a);
  ExpectPayload(m, 1, *b);

  // The reply goes back to the captured peer.
  Header reply;
  reply.type = MsgType::kPullReply;
  reply.sender_role = Role::kServer;
  reply.request_id = 42;
  reply.ranges = {{0, 4}};
  auto values = Floats(4, 7.0f);
  ASSERT_TRUE(SendMessage(router_, reply, {{values, values->data(), values->size()}}, m.peer));
  Message r;
  ASSERT_TRUE(ReceiveMessage(dealer_, /*router=*/false, kWaitMs, &r));
  EXPECT_EQ(r.peer, "");
  EXPECT_EQ(r.header.type, MsgType::kPullReply);
  EXPECT_EQ(r.header.sender_role, Role::kServer);
  EXPECT_EQ(r.header.request_id, 42u);
  ExpectPayload(r, 0, *values);
}

TEST_F(TransportTest, MessageWithoutPayloads) {
  Header h;
  h.type = MsgType::kPull;
  h.ranges = {{0, 9}};
  h.payload_bytes = {123};  // overwritten by SendMessage
  ASSERT_TRUE(SendMessage(dealer_, h));
  Message m;
  ASSERT_TRUE(ReceiveMessage(router_, true, kWaitMs, &m));
  EXPECT_EQ(m.header.type, MsgType::kPull);
  EXPECT_TRUE(m.header.payload_bytes.empty());
  EXPECT_TRUE(m.payloads.empty());
}

TEST_F(TransportTest, SmallOddSizedPayloadsAreReadableInPlace) {
  // Several small frames in one message land at arbitrary offsets of ZeroMQ's receive buffer;
  // the floats must still be aligned and intact.
  std::vector<Payload> payloads;
  std::vector<std::shared_ptr<std::vector<float>>> keep;
  Header h = PushHeader(1, 0, 1);
  h.type = MsgType::kReport;  // several payload frames
  h.ranges.clear();
  int64_t begin = 0;
  for (size_t n : {1, 3, 2, 7, 1, 5, 33, 9}) {
    keep.push_back(Floats(n, static_cast<float>(begin)));
    payloads.push_back({keep.back(), keep.back()->data(), n});
    h.ranges.push_back({begin, begin + static_cast<int64_t>(n)});
    begin += static_cast<int64_t>(n);
  }
  ASSERT_TRUE(SendMessage(dealer_, h, payloads));
  Message m;
  ASSERT_TRUE(ReceiveMessage(router_, true, kWaitMs, &m));
  ASSERT_EQ(m.payloads.size(), keep.size());
  for (size_t i = 0; i < keep.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.floats(i)) % alignof(float), 0u) << i;
    ExpectPayload(m, i, *keep[i]);
  }
}

TEST(TransportZeroCopy, InprocPayloadIsNotCopiedAndItsOwnerLivesUntilReleased) {
  zmq::context_t ctx;
  auto router = MakeSocket(ctx, zmq::socket_type::router);
  router.bind("inproc://zero-copy");
  auto dealer = MakeSocket(ctx, zmq::socket_type::dealer);
  dealer.connect("inproc://zero-copy");

  auto data = Floats(1000, 0.25f);
  const std::vector<float> expected = *data;
  const float* address = data->data();
  std::weak_ptr<std::vector<float>> watch = data;
  ASSERT_TRUE(SendMessage(dealer, PushHeader(5, 0, 1000), {{data, data->data(), data->size()}}));
  EXPECT_EQ(data.use_count(), 2);  // the frame in flight holds the owner
  data.reset();                    // the sender lets go: ZeroMQ alone keeps the memory alive
  ASSERT_FALSE(watch.expired());
  {
    Message m;
    ASSERT_TRUE(ReceiveMessage(router, true, kWaitMs, &m));
    EXPECT_EQ(m.floats(0), address);  // the very buffer, not a copy
    ExpectPayload(m, 0, expected);
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());  // released with the last frame that referenced it
}

TEST_F(TransportTest, TcpPayloadOwnerIsReleasedOnceSent) {
  auto data = Floats(20000, -1.0f);
  const std::vector<float> expected = *data;
  std::weak_ptr<std::vector<float>> watch = data;
  ASSERT_TRUE(SendMessage(dealer_, PushHeader(5, 0, 20000), {{data, data->data(), data->size()}}));
  data.reset();
  Message m;
  ASSERT_TRUE(ReceiveMessage(router_, true, kWaitMs, &m));
  ExpectPayload(m, 0, expected);
  // Once on the wire the frame lets go of the owner (on ZeroMQ's I/O thread, so poll for it).
  const auto deadline = Clock::now() + milliseconds(kWaitMs);
  while (!watch.expired() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_TRUE(watch.expired());
  ExpectPayload(m, 0, expected);  // the received copy is independent of the sender's buffer
}

TEST_F(TransportTest, ReceiveTimesOutAfterTheTimeout) {
  for (long timeout_ms : {0L, 150L}) {
    Message m;
    const auto start = Clock::now();
    EXPECT_FALSE(ReceiveMessage(router_, true, timeout_ms, &m));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    EXPECT_GE(ms, 0.9 * timeout_ms) << "returned too early";
    EXPECT_LT(ms, timeout_ms + 250.0) << "returned too late";
  }
}

TEST_F(TransportTest, MalformedMessageThrowsAndTheSocketKeepsWorking) {
  std::string bad_peer;
  Message m;
  // Raw garbage: not a tteps header.
  dealer_.send(zmq::buffer(std::string("garbage")), zmq::send_flags::none);
  try {
    ReceiveMessage(router_, true, kWaitMs, &m, &bad_peer);
    ADD_FAILURE() << "no CodecError";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bad_peer, "dealer-7");

  // A garbled multi-frame message: every frame is consumed, none leaks into the next message.
  dealer_.send(zmq::buffer(std::string("xx")), zmq::send_flags::sndmore);
  dealer_.send(zmq::buffer(std::string("yyyy")), zmq::send_flags::sndmore);
  dealer_.send(zmq::buffer(std::string("zzzz")), zmq::send_flags::none);
  bad_peer.clear();
  EXPECT_THROW(ReceiveMessage(router_, true, kWaitMs, &m, &bad_peer), CodecError);
  EXPECT_EQ(bad_peer, "dealer-7");

  // A valid header whose payload does not match its declared size.
  const std::string head = EncodeHeader([] {
    Header h = PushHeader(9, 0, 2);
    h.payload_bytes = {8};
    return h;
  }());
  dealer_.send(zmq::buffer(head), zmq::send_flags::sndmore);
  dealer_.send(zmq::buffer(std::string("1234")), zmq::send_flags::none);
  bad_peer.clear();
  try {
    ReceiveMessage(router_, true, kWaitMs, &m, &bad_peer);
    ADD_FAILURE() << "no CodecError";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("declares 8 bytes, got 4"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bad_peer, "dealer-7");

  // The next valid message is received intact.
  auto data = Floats(2, 3.0f);
  ASSERT_TRUE(SendMessage(dealer_, PushHeader(10, 0, 2), {{data, data->data(), data->size()}}));
  Message ok;
  ASSERT_TRUE(ReceiveMessage(router_, true, kWaitMs, &ok, &bad_peer));
  EXPECT_EQ(ok.header.request_id, 10u);
  EXPECT_EQ(ok.peer, "dealer-7");
  ExpectPayload(ok, 0, *data);
}

TEST_F(TransportTest, MalformedReplyOnDealerThrows) {
  // Make sure the router knows the dealer, then answer with garbage.
  Header hello;
  hello.type = MsgType::kHeartbeat;
  ASSERT_TRUE(SendMessage(dealer_, hello));
  Message m;
  ASSERT_TRUE(ReceiveMessage(router_, true, kWaitMs, &m));
  router_.send(zmq::buffer(std::string("dealer-7")), zmq::send_flags::sndmore);
  router_.send(zmq::buffer(std::string("nonsense!")), zmq::send_flags::none);
  EXPECT_THROW(ReceiveMessage(dealer_, false, kWaitMs, &m), CodecError);
}

TEST_F(TransportTest, SendToUnknownPeerOnRouterReturnsFalse) {
  Header h;
  h.type = MsgType::kError;
  h.text = "nobody";
  EXPECT_FALSE(SendMessage(router_, h, {}, "no-such-peer"));
  auto data = Floats(3, 0.0f);
  Header reply;
  reply.type = MsgType::kPullReply;
  reply.ranges = {{0, 3}};
  EXPECT_FALSE(SendMessage(router_, reply, {{data, data->data(), data->size()}}, "no-such-peer"));
  // A payload that could not be sent must not leak its owner.
  EXPECT_EQ(data.use_count(), 1);
  // The router still works for a known peer afterwards.
  ASSERT_TRUE(SendMessage(dealer_, PushHeader(2, 0, 3), {{data, data->data(), data->size()}}));
  Message m;
  ASSERT_TRUE(ReceiveMessage(router_, true, kWaitMs, &m));
  EXPECT_TRUE(SendMessage(router_, h, {}, m.peer));
  Message r;
  ASSERT_TRUE(ReceiveMessage(dealer_, false, kWaitMs, &r));
  EXPECT_EQ(r.header.text, "nobody");
}

// Found by a flood test: a ROUTER reply to a peer that never reads blocked the server forever
// once the peer's queue was full. Now the reply is dropped and the sender told.
TEST(SendMessage, ARouterNeverWaitsForAPeerThatDoesNotRead) {
  zmq::context_t ctx;
  auto router = MakeSocket(ctx, zmq::socket_type::router);
  const std::string ep = BindTcp(router, "127.0.0.1");
  auto dealer = MakeSocket(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvhwm, 10);
  dealer.connect(ep);
  Header h;
  h.type = MsgType::kHeartbeat;
  ASSERT_TRUE(SendMessage(dealer, h));
  Message m;
  ASSERT_TRUE(ReceiveMessage(router, true, 2000, &m));
  const auto start = std::chrono::steady_clock::now();
  int sent = 0;
  for (int i = 0; i < 100000 && SendMessage(router, h, {}, m.peer); ++i) ++sent;
  EXPECT_LT(sent, 100000);  // the queue filled and the sender heard of it
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
}

}  // namespace
}  // namespace tteps
