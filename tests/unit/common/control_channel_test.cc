// A node's control channel against a scripted scheduler (a ROUTER socket in the test): the
// registration handshake, heartbeats, run-time accumulation, shutdown, and a scheduler gone silent.
#include "common/control_channel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "common/busy_peers.h"
#include "common/cereal_body.h"
#include "common/transport.h"

namespace tteps {
namespace {

// A role's topic, as the roles define theirs (common/topics/worker_topics.h).
struct Setting {
  int64_t value = 0;
  template <class A>
  void serialize(A& ar) {
    ar(value);
  }
};
constexpr Topic<Setting> kSet{"set"};

using Clock = std::chrono::steady_clock;

class ControlChannelTest : public ::testing::Test {
 protected:
  ControlChannelTest() : scheduler_(MakeSocket(ctx_, zmq::socket_type::router)) {
    endpoint_ = BindTcp(scheduler_, "127.0.0.1");
  }

  NodeInfo Worker() {
    NodeInfo n;
    n.role = Role::kWorker;
    n.host = "test";
    return n;
  }

  // Receives the next message of `type` at the scheduler (others are skipped), or fails.
  Message Expect(MsgType type, double within_s = 2) {
    const auto start = Clock::now();
    Message m;
    while (std::chrono::duration<double>(Clock::now() - start).count() < within_s) {
      if (ReceiveMessage(scheduler_, true, 20, &m) && m.header.type == type) return m;
    }
    ADD_FAILURE() << "no " << TypeName(type) << " within " << within_s << " s";
    return m;
  }

  void Answer(const std::string& peer, MsgType type, int64_t samples = 0,
              const std::string& text = "", const std::string& topic = "") {
    Header h;
    h.type = type;
    h.sender_role = Role::kScheduler;
    h.samples = samples;
    h.text = text;
    h.topic = topic;
    ASSERT_TRUE(SendMessage(scheduler_, h, {}, peer));
  }

  // Registers the channel: the scheduler answers with a map assigning id 3.
  std::string Register(ControlChannel& channel) {
    std::string peer;
    std::thread scheduler([&] {
      Message m = Expect(MsgType::kRegister);
      peer = m.peer;
      ClusterMap map;
      map.config.exchange.mode = Mode::kSync;
      map.your_id = 3;
      Header h;
      h.type = MsgType::kClusterMap;
      h.text = EncodeBody(map);
      SendMessage(scheduler_, h, {}, m.peer);
    });
    const ClusterMap map = channel.Register();
    scheduler.join();
    EXPECT_EQ(map.your_id, 3);
    EXPECT_EQ(channel.self().id, 3);
    return peer;
  }

  zmq::context_t ctx_;
  zmq::socket_t scheduler_;
  std::string endpoint_;
};

// A heartbeat's answer to a server: a bit per computing worker, through the wire and back.
TEST(HeartbeatAck, NamesTheComputingWorkersABitEach) {
  HeartbeatAck ack;
  for (int w : {0, 7, 8, 1023}) ack.SetComputing(w);
  EXPECT_EQ(ack.computing.size(), 128u);
  const HeartbeatAck back = DecodeCereal<HeartbeatAck>(EncodeCereal(ack));
  std::vector<int> named;
  back.ForEachComputing([&](int w) { named.push_back(w); });
  EXPECT_EQ(named, (std::vector<int>{0, 7, 8, 1023}));
  EXPECT_FALSE(back.others_computing);
}

TEST_F(ControlChannelTest, HeartbeatsCommandsReportsAndShutdown) {
  ControlChannel channel(ctx_, endpoint_, Worker(), /*timeout_s=*/5, /*heartbeat_s=*/0.05);
  const std::string peer = Register(channel);
  int64_t setting = 0;  // written by the handler under the channel's lock
  channel.OnCommand(kSet, [&](const Setting& s) { setting = s.value; });
  channel.Start();
  EXPECT_THROW(channel.OnCommand(kSet, [](const Setting&) {}), std::logic_error);
  Message hb = Expect(MsgType::kHeartbeat);
  EXPECT_EQ(hb.header.sender_id, 3);

  // A command the role does not know is logged and ignored; a known one reaches its handler,
  // and a waiter wakes for it.
  // A garbled body is logged and ignored too.
  Answer(peer, MsgType::kCommand, 0, kSet.Encode({9}), "unknown");
  Answer(peer, MsgType::kCommand, 0, "garbage", "set");
  Answer(peer, MsgType::kCommand, 0, kSet.Encode({4}), "set");
  const auto start = Clock::now();
  channel.WaitUntil([&] { return setting == 4; }, "the setting");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2);

  channel.Report(kSet, {7});
  Message report = Expect(MsgType::kReport);
  EXPECT_EQ(report.header.topic, "set");
  EXPECT_EQ(kSet.Decode(report.header).value, 7);
  channel.Flush();

  EXPECT_FALSE(channel.ShutdownRequested());
  Answer(peer, MsgType::kShutdown, 0, "worker 1 has been silent");
  std::string reason;
  bool failed = false;
  while (!channel.ShutdownRequested(&reason, &failed) &&
         Clock::now() - start < std::chrono::seconds(4)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(failed);
  EXPECT_EQ(reason, "worker 1 has been silent");
}

// A command waiting when the channel starts: its handler (which runs under the channel's lock)
// notes a followed view, as a joiner's first view does, and the next heartbeat says so. The
// handler runs on the channel's thread, possibly before Start has stored that thread: the channel
// must not then wait for its own lock (a joiner of a job of 256 workers hung so, silent until
// it was declared lost).
TEST_F(ControlChannelTest, AViewFollowedInAHandlerAtTheStartIsInTheNextHeartbeat) {
  for (int round = 1; round <= 20; ++round) {
    auto channel = std::make_unique<ControlChannel>(ctx_, endpoint_, Worker(), /*timeout_s=*/5,
                                                    /*heartbeat_s=*/10);
    const std::string peer = Register(*channel);
    ControlChannel* c = channel.get();
    channel->OnCommand(kSet, [c](const Setting& s) { c->NoteViewFollowed(s.value); });
    Answer(peer, MsgType::kCommand, 0, kSet.Encode({round}), "set");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // in the node's queue
    channel->Start();
    int64_t view = -1;
    const auto start = Clock::now();
    while (view != round && Clock::now() - start < std::chrono::seconds(2)) {
      Message m;
      if (ReceiveMessage(scheduler_, true, 20, &m) && m.header.type == MsgType::kHeartbeat) {
        view = DecodeCereal<HeartbeatBody>(m.header.text).view;
      }
    }
    if (view != round) {
      // Its thread holds the lock for good: the channel cannot be destroyed.
      ADD_FAILURE() << "round " << round << ": no heartbeat with the followed view in 2 s";
      channel.release();
      std::_Exit(1);
    }
  }
}

// Changes from a view the node does not hold (a message lost) are not followed: its heartbeat
// asks for the whole view, and asks no more once that came.
TEST_F(ControlChannelTest, ChangesFromAViewItLacksAreRefusedAndTheWholeViewAskedFor) {
  ControlChannel channel(ctx_, endpoint_, Worker(), /*timeout_s=*/5, /*heartbeat_s=*/0.05);
  const std::string peer = Register(channel);
  std::vector<int64_t> followed;  // under the channel's lock
  channel.OnView([&](const View& v) { followed.push_back(v.number); });
  channel.Start();
  View v3, v4;
  v3.number = 3;
  v3.live = {0, 1};
  v4.number = 4;
  v4.live = {0, 1, 2};
  Answer(peer, MsgType::kCommand, 0, kView.Encode(ViewChangesFrom(v3, v4)), "view");
  const auto wants = [&](bool want) {
    const auto start = Clock::now();
    while (Clock::now() - start < std::chrono::seconds(2)) {
      const Message hb = Expect(MsgType::kHeartbeat);
      if (DecodeCereal<HeartbeatBody>(hb.header.text).want_view == want) return true;
    }
    return false;
  };
  EXPECT_TRUE(wants(true));
  Answer(peer, MsgType::kCommand, 0, kView.Encode(WholeView(v4)), "view");
  EXPECT_TRUE(wants(false));
  channel.WaitUntil([&] { return !followed.empty(); }, "the view");
  EXPECT_EQ(followed, (std::vector<int64_t>{4}));
}

TEST_F(ControlChannelTest, AWaitEndsAtItsDeadlineOrAtAShutdown) {
  ControlChannel channel(ctx_, endpoint_, Worker(), /*timeout_s=*/0.3, /*heartbeat_s=*/0.05);
  const std::string peer = Register(channel);
  channel.Start();
  const auto start = Clock::now();
  try {
    channel.WaitUntil([] { return false; }, "the go");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the go did not come within"), std::string::npos)
        << e.what();
  }
  EXPECT_GT(std::chrono::duration<double>(Clock::now() - start).count(), 0.25);
  Answer(peer, MsgType::kShutdown, 0, "the job failed");
  EXPECT_THROW(channel.WaitUntil([] { return false; }, "the go"), std::runtime_error);
}

TEST_F(ControlChannelTest, ASilentSchedulerStopsTheNodeWithinTheTimeout) {
  ControlChannel channel(ctx_, endpoint_, Worker(), /*timeout_s=*/0.5, /*heartbeat_s=*/0.05);
  Register(channel);
  const auto start = Clock::now();
  channel.Start();  // nobody answers the heartbeats
  std::string reason;
  bool failed = false;
  while (!channel.ShutdownRequested(&reason, &failed) &&
         Clock::now() - start < std::chrono::seconds(3)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(failed);
  EXPECT_NE(reason.find("scheduler at " + endpoint_ + " has been silent"), std::string::npos)
      << reason;
  EXPECT_GT(took, 0.4);
  EXPECT_LT(took, 1.5);
}

TEST_F(ControlChannelTest, ASilentSchedulerStopsTheNodeWithinTheSilenceLimit) {
  ControlChannel channel(ctx_, endpoint_, Worker(), /*timeout_s=*/10, /*heartbeat_s=*/0.05);
  Register(channel);
  channel.SetTiming(/*timeout_s=*/10, /*heartbeat_s=*/0.05, /*silence_s=*/0.4);
  const auto start = Clock::now();
  channel.Start();  // nobody answers the heartbeats
  std::string reason;
  bool failed = false;
  while (!channel.ShutdownRequested(&reason, &failed) &&
         Clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(failed);
  EXPECT_NE(reason.find("has been silent for"), std::string::npos) << reason;
  EXPECT_NE(reason.find("(--silence_s)"), std::string::npos) << reason;
  EXPECT_GT(took, 0.3);
  EXPECT_LT(took, 1.5);  // well before the 10 s timeout
}

TEST_F(ControlChannelTest, RegistrationWithoutAnswerNamesTheScheduler) {
  ControlChannel channel(ctx_, endpoint_, Worker(), /*timeout_s=*/0.3, /*heartbeat_s=*/1);
  try {
    channel.Register();
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("scheduler at " + endpoint_), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tteps
