// A backup's queue of pushes and its primary's order (server/push_order.h), without sockets.
#include "server/push_order.h"

#include <gtest/gtest.h>

namespace tteps::server {
namespace {

Message Push(int worker, int64_t step) {
  Message m;
  m.header.type = MsgType::kPush;
  m.header.sender_id = worker;
  m.header.step = step;
  return m;
}

TEST(PushOrder, TheStreamNamesPushesThatMayArriveBeforeOrAfterTheirEntry) {
  PushOrder order(3, 10);
  EXPECT_EQ(order.Front(), nullptr);
  ASSERT_TRUE(order.AddPush(1, Push(1, 7)));
  ASSERT_TRUE(order.AddOrder(0, 2, 2, 1));  // worker 2's first push: not here yet
  ASSERT_TRUE(order.AddOrder(1, 1, 1, 1));
  ASSERT_NE(order.Front(), nullptr);
  EXPECT_EQ(order.Front()->sender, 2);
  EXPECT_FALSE(order.HasPush(2));
  ASSERT_TRUE(order.AddPush(2, Push(2, 3)));
  ASSERT_TRUE(order.HasPush(2));
  EXPECT_EQ(order.PopPush(2).header.step, 3);
  order.PopFront();
  EXPECT_EQ(order.Front()->sender, 1);
  EXPECT_EQ(order.PopPush(1).header.step, 7);
  order.PopFront();
  EXPECT_EQ(order.held(), 0u);
  EXPECT_EQ(order.orders(), 0u);
}

// A worker that joined (id 5, beyond the 3 slots) pushes for lost worker 1's slot: its entries
// name it as the sender and slot 1, so a late push of worker 1 itself is never taken for it.
TEST(PushOrder, AJoinersPushesAreNamedByItsOwnIdNotTheSlotItTook) {
  PushOrder order(3, 10);
  ASSERT_TRUE(order.AddPush(1, Push(1, 40)));  // the lost worker's late push
  ASSERT_TRUE(order.AddPush(5, Push(5, 41)));
  ASSERT_TRUE(order.AddOrder(0, 1, 1, PushOrder::kDropped));
  ASSERT_TRUE(order.AddOrder(1, 5, 1, PushOrder::Rejoined(30)));
  ASSERT_TRUE(order.AddOrder(2, 5, 1, 31));
  EXPECT_EQ(order.Front()->count, PushOrder::kDropped);
  order.PopFront();
  EXPECT_EQ(PushOrder::RejoinClock(order.Front()->count), 30);
  order.PopFront();
  ASSERT_EQ(order.Front()->sender, 5);
  EXPECT_EQ(order.Front()->slot, 1);
  EXPECT_EQ(order.PopPush(5).header.step, 41);
  order.PopFront();
  EXPECT_TRUE(order.HasPush(1));  // never named: dropped with its worker at a promotion
}

TEST(PushOrder, AGapOrAForeignSlotInTheStreamIsRefused) {
  PushOrder order(2, 10);
  EXPECT_TRUE(order.AddOrder(0, 0, 0, 1));
  EXPECT_FALSE(order.AddOrder(2, 0, 0, 2));  // entry 1 never came
  EXPECT_FALSE(order.AddOrder(1, 5, 5, 1));  // no slot 5
  EXPECT_FALSE(order.AddOrder(1, 0, -1, 1));
  EXPECT_TRUE(order.AddOrder(1, 1, 1, PushOrder::kDropped));
  EXPECT_EQ(order.next_seq(), 2u);
  // Another primary's stream counts from 0.
  order.Restart();
  EXPECT_EQ(order.orders(), 0u);
  EXPECT_TRUE(order.AddOrder(0, 1, 1, 1));
}

TEST(PushOrder, HoldsAtMostItsBoundAndPromotionTakesAllInArrivalOrder) {
  PushOrder order(3, 4);
  ASSERT_TRUE(order.AddPush(2, Push(2, 0)));
  ASSERT_TRUE(order.AddPush(0, Push(0, 1)));
  ASSERT_TRUE(order.AddPush(2, Push(2, 2)));
  ASSERT_TRUE(order.AddPush(1, Push(1, 3)));
  EXPECT_FALSE(order.AddPush(1, Push(1, 4)));
  ASSERT_TRUE(order.AddOrder(0, 1, 1, 1));
  const auto all = order.TakeAll();
  ASSERT_EQ(all.size(), 4u);
  const int workers[] = {2, 0, 2, 1};
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].first, workers[i]);
    EXPECT_EQ(all[i].second.header.step, static_cast<int64_t>(i));
  }
  EXPECT_EQ(order.held(), 0u);
  EXPECT_EQ(order.orders(), 0u);
}

}  // namespace
}  // namespace tteps::server
