#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace loom {
namespace {

std::vector<int32_t> DrainPayloads(EventQueue& queue) {
  std::vector<int32_t> payloads;
  while (!queue.empty()) payloads.push_back(queue.Pop().payload);
  return payloads;
}

TEST(EventQueue, PopsEarliestTimeFirst) {
  EventQueue queue;
  queue.Push(SimTime::FromNanos(30), 3);
  queue.Push(SimTime::FromNanos(10), 1);
  queue.Push(SimTime::FromNanos(20), 2);
  EXPECT_EQ(queue.top().time.nanos(), 10);
  EXPECT_EQ(DrainPayloads(queue), (std::vector<int32_t>{1, 2, 3}));
}

TEST(EventQueue, TiesPopInInsertionOrder) {
  EventQueue queue;
  queue.Reserve(64);
  // Many equal times, so that the heap's internal order would scramble them without the
  // sequence number.
  for (int32_t i = 0; i < 50; ++i) queue.Push(SimTime::FromNanos(i % 2 == 0 ? 5 : 7), i);
  std::vector<int32_t> expected;
  for (int32_t i = 0; i < 50; i += 2) expected.push_back(i);
  for (int32_t i = 1; i < 50; i += 2) expected.push_back(i);
  EXPECT_EQ(DrainPayloads(queue), expected);
}

TEST(EventQueue, SequenceNumbersKeepGrowingAcrossPops) {
  EventQueue queue;
  queue.Push(SimTime::FromNanos(5), 0);
  const EventQueue::Event first = queue.Pop();
  queue.Push(SimTime::FromNanos(5), 1);
  queue.Push(SimTime::FromNanos(5), 2);
  EXPECT_EQ(first.sequence, 0u);
  EXPECT_EQ(queue.Pop().sequence, 1u);
  EXPECT_EQ(queue.size(), 1u);
}

}  // namespace
}  // namespace loom
