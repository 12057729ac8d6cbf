#include "op/op_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Writes |shape| with OpShapeJson and reads it back as an op of |kind|.
OpShape RoundTrip(OpKind kind, const OpShape& shape) {
  const json written = json::parse(OpShapeJson(shape).dump());
  JsonReader r(written, "plan.json", "ops[0].shape");
  OpShape read = ReadOpShape(kind, r);
  EXPECT_TRUE(r.Finish(UnknownKeys::kError).ok());
  return read;
}

TEST(OpShapeJson, EveryKindRoundTrips) {
  const GemmShape gemm{
      .m = 12288, .n = 4608, .k = 2048, .batch = 2, .dtype = Dtype::kFp8, .accumulate_fp32 = true};
  const AttentionShape attention{.batch = 1,
                                 .heads = 32,
                                 .kv_heads = 8,
                                 .seq_q = 4096,
                                 .seq_kv = 8192,
                                 .head_dim_qk = 192,
                                 .head_dim_v = 128,
                                 .causal = false,
                                 .backward = true,
                                 .dtype = Dtype::kFp16,
                                 .family = AttentionFamily::kCudnn};
  const MemoryShape memory{.bytes_read = 7, .bytes_written = 0};
  const CollectiveShape collective{
      .kind = CollectiveKind::kReduceScatter, .group = CommGroup::kEtp, .bytes = 1 << 20};
  const OpShape g = RoundTrip(OpKind::kGemm, gemm);
  const OpShape a = RoundTrip(OpKind::kAttention, attention);
  const OpShape m = RoundTrip(OpKind::kMemoryBound, memory);
  const OpShape c = RoundTrip(OpKind::kCollective, collective);
  EXPECT_EQ(std::get<GemmShape>(g).k, 2048);
  EXPECT_TRUE(std::get<GemmShape>(g).accumulate_fp32);
  EXPECT_EQ(std::get<GemmShape>(g).dtype, Dtype::kFp8);
  EXPECT_EQ(std::get<AttentionShape>(a).head_dim_qk, 192);
  EXPECT_FALSE(std::get<AttentionShape>(a).causal);
  EXPECT_TRUE(std::get<AttentionShape>(a).backward);
  EXPECT_EQ(std::get<AttentionShape>(a).family, AttentionFamily::kCudnn);
  EXPECT_EQ(std::get<MemoryShape>(m).bytes_read, 7);
  EXPECT_EQ(std::get<CollectiveShape>(c).group, CommGroup::kEtp);
  EXPECT_EQ(std::get<CollectiveShape>(c).kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(std::get<CollectiveShape>(c).bytes, 1 << 20);
}

TEST(OpShapeJson, AccumulateFp32IsWrittenOnlyWhenSet) {
  EXPECT_EQ(OpShapeJson(GemmShape{.m = 1, .n = 2, .k = 3}).dump(),
            R"({"m":1,"n":2,"k":3,"batch":1,"dtype":"bf16"})");
}

TEST(ReadKernelShape, NamesTheKeyOfEveryProblem) {
  const json shape = json::parse(R"({"batch": 1, "heads": 6, "kv_heads": 4, "seq_q": 16,
      "seq_kv": 16, "head_dim_qk": 64, "head_dim_v": 64, "causal": true, "dtype": "bf61"})");
  JsonReader r(shape, "profile.json", "samples[2]");
  ReadKernelShape(OpKind::kAttention, r);
  const Status st = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(st.ok());
  const std::string message(st.message());
  EXPECT_NE(message.find("samples[2].heads: (6) is not a multiple of kv_heads (4)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("backward: is missing; add \"backward\": true or false"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("dtype: is \"bf61\"; did you mean \"bf16\"?"), std::string::npos)
      << message;
}

TEST(ReadOpShape, UnknownCollectiveGroupListsTheGroups) {
  const json shape = json::parse(R"({"kind": "all_reduce", "group": "pp", "bytes": 8})");
  JsonReader r(shape, "plan.json", "op.shape");
  ReadOpShape(OpKind::kCollective, r);
  const Status st = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("group: is \"pp\"; it must be one of"),
            std::string::npos)
      << st.message();
}

TEST(DescribeShape, SpellsEachKernelForMessages) {
  EXPECT_EQ(DescribeShape(GemmShape{.m = 4096, .n = 4096, .k = 8192}), "gemm 4096x4096x8192 bf16");
  EXPECT_EQ(DescribeShape(
                GemmShape{.m = 12288, .n = 4608, .k = 2048, .batch = 1, .accumulate_fp32 = true}),
            "gemm 12288x4608x2048 bf16 +=fp32");
  EXPECT_EQ(DescribeShape(AttentionShape{.batch = 1,
                                         .heads = 32,
                                         .kv_heads = 8,
                                         .seq_q = 4096,
                                         .seq_kv = 4096,
                                         .head_dim_qk = 128,
                                         .head_dim_v = 128}),
            "attention fwd causal b1 h32/8 s4096/4096 d128/128 bf16");
  EXPECT_EQ(DescribeShape(MemoryShape{.bytes_read = 256 << 20, .bytes_written = 1000}),
            "memory 256 MiB read, 1000 B written");
}

}  // namespace
}  // namespace loom
