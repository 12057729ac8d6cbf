#include <string>

#include <gtest/gtest.h>

#include "device/cuda/nccl_buffers.h"

namespace loom::cuda {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

CollectiveBuffers Buffers(ProfiledCollective collective, int64_t size_bytes, int ranks) {
  Result<CollectiveBuffers> buffers = BuffersOf(collective, size_bytes, ranks);
  EXPECT_TRUE(buffers.ok()) << buffers.status().ToString();
  return buffers.ok() ? *buffers : CollectiveBuffers{};
}

TEST(BuffersOf, AllReduceReducesTheWholeSize) {
  const CollectiveBuffers b = Buffers(ProfiledCollective::kAllReduce, kMiB, 8);
  EXPECT_EQ(b.count, kMiB / 4);
  EXPECT_EQ(b.send_count, kMiB / 4);
  EXPECT_EQ(b.recv_count, kMiB / 4);
  EXPECT_EQ(b.in_place_send_offset, 0);
  EXPECT_EQ(b.in_place_recv_offset, 0);
  EXPECT_EQ(b.bytes, kMiB);
}

TEST(BuffersOf, AllGatherSizeIsTheOutput) {
  const CollectiveBuffers b = Buffers(ProfiledCollective::kAllGather, kMiB, 8);
  EXPECT_EQ(b.count, kMiB / 4 / 8);  // ncclAllGather's sendcount
  EXPECT_EQ(b.send_count, kMiB / 4 / 8);
  EXPECT_EQ(b.recv_count, kMiB / 4);
  // In place rank r sends from its own slot of the output: recvbuff + r * sendcount.
  EXPECT_EQ(b.in_place_send_offset, kMiB / 4 / 8);
  EXPECT_EQ(b.in_place_recv_offset, 0);
  EXPECT_EQ(b.bytes, kMiB);
}

TEST(BuffersOf, ReduceScatterSizeIsTheInput) {
  const CollectiveBuffers b = Buffers(ProfiledCollective::kReduceScatter, kMiB, 8);
  EXPECT_EQ(b.count, kMiB / 4 / 8);  // ncclReduceScatter's recvcount
  EXPECT_EQ(b.send_count, kMiB / 4);
  EXPECT_EQ(b.recv_count, kMiB / 4 / 8);
  // In place rank r receives into its own slot of the input: sendbuff + r * recvcount.
  EXPECT_EQ(b.in_place_send_offset, 0);
  EXPECT_EQ(b.in_place_recv_offset, kMiB / 4 / 8);
  EXPECT_EQ(b.bytes, kMiB);
}

TEST(BuffersOf, AllToAllSendsSizeOverRanksBytesToEveryPeer) {
  const CollectiveBuffers b = Buffers(ProfiledCollective::kAllToAll, kMiB, 8);
  EXPECT_EQ(b.count * 4, kMiB / 8);  // bytes to each peer
  EXPECT_EQ(b.send_count, kMiB / 4);
  EXPECT_EQ(b.recv_count, kMiB / 4);
  EXPECT_EQ(b.bytes, kMiB);
}

TEST(BuffersOf, BroadcastSendsTheWholeSizeFromTheRoot) {
  const CollectiveBuffers b = Buffers(ProfiledCollective::kBroadcast, 64 * kMiB, 16);
  EXPECT_EQ(b.count, 16 * kMiB);
  EXPECT_EQ(b.send_count, 16 * kMiB);
  EXPECT_EQ(b.recv_count, 16 * kMiB);
}

TEST(BuffersOf, SendRecvSendsTheWholeSizeToOnePeer) {
  const CollectiveBuffers b = Buffers(ProfiledCollective::kSendRecv, 4096, 2);
  EXPECT_EQ(b.count, 1024);
  EXPECT_EQ(b.send_count, 1024);
  EXPECT_EQ(b.recv_count, 1024);
  EXPECT_EQ(b.bytes, 4096);
}

TEST(BuffersOf, RoundsDownToWholeElementsPerRankAsNcclTestsDoes) {
  // nccl-tests -b 1000 over 8 ranks prints all_gather's size as 992: 250 elements, 31 per rank.
  const CollectiveBuffers gather = Buffers(ProfiledCollective::kAllGather, 1000, 8);
  EXPECT_EQ(gather.count, 31);
  EXPECT_EQ(gather.recv_count, 248);
  EXPECT_EQ(gather.bytes, 992);
  const CollectiveBuffers reduce = Buffers(ProfiledCollective::kAllReduce, 1002, 8);
  EXPECT_EQ(reduce.count, 250);
  EXPECT_EQ(reduce.bytes, 1000);
}

TEST(BuffersOf, EightBytesIsEnoughForWholeBufferCollectives) {
  EXPECT_EQ(Buffers(ProfiledCollective::kAllReduce, 8, 64).count, 2);
  EXPECT_EQ(Buffers(ProfiledCollective::kSendRecv, 8, 64).count, 2);
}

TEST(BuffersOf, LessThanOneElementPerRankIsUnimplemented) {
  Result<CollectiveBuffers> buffers = BuffersOf(ProfiledCollective::kAllGather, 16, 8);
  ASSERT_FALSE(buffers.ok());
  EXPECT_EQ(buffers.status().code(), Status::Code::kUnimplemented);
  EXPECT_NE(buffers.status().message().find("all_gather of 16 B over 8 ranks"), std::string::npos)
      << buffers.status().message();
  EXPECT_NE(buffers.status().message().find("smaller than one fp32 element per rank"),
            std::string::npos);
  EXPECT_NE(buffers.status().message().find("from 32 B"), std::string::npos);
  EXPECT_EQ(BuffersOf(ProfiledCollective::kAllReduce, 3, 1).status().code(),
            Status::Code::kUnimplemented);
}

TEST(BuffersOf, ZeroRanksOrBytesIsInvalid) {
  EXPECT_EQ(BuffersOf(ProfiledCollective::kAllReduce, kMiB, 0).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(BuffersOf(ProfiledCollective::kAllReduce, 0, 8).status().code(),
            Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace loom::cuda
