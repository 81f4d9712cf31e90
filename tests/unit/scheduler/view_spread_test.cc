// A view is followed once every live worker and server said so in a heartbeat: lost nodes do
// not hold it back, several views on their way are each timed, and nothing is said twice.
#include "scheduler/view_spread.h"

#include <gtest/gtest.h>

#include <zmq.hpp>

namespace tteps::scheduler {
namespace {

NodeInfo Info(Role role, int id) {
  NodeInfo i;
  i.role = role;
  i.id = id;
  return i;
}

TEST(ViewSpread, AViewIsFollowedWhenEveryLiveNodeFollowedIt) {
  zmq::context_t ctx;
  zmq::socket_t socket(ctx, zmq::socket_type::router);
  NodeTable nodes(socket);
  nodes.Add(Info(Role::kServer, 0), "s0");
  nodes.Add(Info(Role::kWorker, 0), "w0");
  nodes.Add(Info(Role::kWorker, 1), "w1");
  ViewSpread spread;
  EXPECT_TRUE(spread.Heard(nodes, 1.0).empty());  // nothing on its way
  spread.Sent(1, "lost", 2.0);
  spread.Sent(2, "join", 2.5);
  nodes.Find("s0")->view = 2;
  nodes.Find("w0")->view = 1;
  EXPECT_TRUE(spread.Heard(nodes, 2.6).empty());  // worker 1 has followed neither
  nodes.Find("w1")->lost = true;                  // lost: not waited for
  auto lines = spread.Heard(nodes, 3.0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].str(),
            R"({"type":"view_followed","view":1,"reason":"lost","followed_s":1,"wall_s":3})");
  nodes.Find("w0")->view = 2;
  lines = spread.Heard(nodes, 3.25);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].str().find(R"("view":2,"reason":"join","followed_s":0.75)"), std::string::npos)
      << lines[0].str();
  EXPECT_TRUE(spread.Heard(nodes, 4.0).empty());  // said once
}

}  // namespace
}  // namespace tteps::scheduler
