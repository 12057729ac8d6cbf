#include "core/status.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, InvalidArgumentKeepsMessage) {
  Status s = Status::InvalidArgument("x.json: tp: bad");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "x.json: tp: bad");
  EXPECT_EQ(s.ToString(), "invalid argument: x.json: tp: bad");
}

TEST(Status, WithContextPrefixesTheMessageAndKeepsTheCode) {
  const Status s = Status::ResourceExhausted("cudaMalloc: out of memory")
                       .WithContext("the operand arena of 4096 bytes");
  EXPECT_EQ(s.code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(s.message(), "the operand arena of 4096 bytes: cudaMalloc: out of memory");
  EXPECT_EQ(Status::Unimplemented("no engine").WithContext("sdpa").code(),
            Status::Code::kUnimplemented);
  EXPECT_TRUE(Status::Ok().WithContext("anything").ok());
  EXPECT_EQ(Status::Ok().WithContext("anything").message(), "");
}

TEST(Status, WithSuffixAppendsToTheMessageAndKeepsTheCode) {
  const Status s = Status::Unavailable("no device").WithSuffix("; aborting failed too: gone");
  EXPECT_EQ(s.code(), Status::Code::kUnavailable);
  EXPECT_EQ(s.message(), "no device; aborting failed too: gone");
  EXPECT_EQ(Status::DeadlineExceeded("late").WithSuffix("!").code(),
            Status::Code::kDeadlineExceeded);
  EXPECT_TRUE(Status::Ok().WithSuffix("; anything").ok());
  EXPECT_EQ(Status::Ok().WithSuffix("; anything").message(), "");
}

Status FailIfNegative(int v) {
  if (v < 0) return Status::InvalidArgument("negative");
  return Status::Ok();
}

Status Chain(int v, bool* reached_end) {
  LOOM_RETURN_IF_ERROR(FailIfNegative(v));
  *reached_end = true;
  return Status::Ok();
}

TEST(Status, ReturnIfErrorStopsAtFirstFailure) {
  bool reached_end = false;
  EXPECT_EQ(Chain(-1, &reached_end).message(), "negative");
  EXPECT_FALSE(reached_end);
  EXPECT_TRUE(Chain(1, &reached_end).ok());
  EXPECT_TRUE(reached_end);
}

TEST(Result, HoldsValueOrError) {
  Result<int> good = 42;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  Result<int> bad = Status::NotFound("missing.json: cannot open");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(bad.status().message(), "missing.json: cannot open");
}

Result<std::string> NameIfPositive(int v) {
  if (v <= 0) return Status::InvalidArgument("not positive: " + std::to_string(v));
  return "n" + std::to_string(v);
}

Result<int> CheckedSum(int a, int b) {
  if (b > 0 && a > std::numeric_limits<int>::max() - b) return Status::InvalidArgument("overflow");
  return a + b;
}

// Declares a variable from one Result, assigns an existing one from a second (whose expression
// holds commas), and returns the first error with its code and message.
Result<std::string> Join(int a, int b, int* assigned) {
  LOOM_ASSIGN_OR_RETURN(std::string first, NameIfPositive(a));
  std::pair<int, int> pair{0, 0};
  LOOM_ASSIGN_OR_RETURN(pair.second, CheckedSum(std::max(b, 0), 1));
  LOOM_ASSIGN_OR_RETURN(std::string second, NameIfPositive(b));
  *assigned = pair.second;
  return first + "+" + second;
}

TEST(Result, AssignOrReturnMovesTheValueOrReturnsTheError) {
  int assigned = 0;
  Result<std::string> both = Join(2, 3, &assigned);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, "n2+n3");
  EXPECT_EQ(assigned, 4);
  assigned = 0;
  Result<std::string> first_bad = Join(-1, 3, &assigned);
  ASSERT_FALSE(first_bad.ok());
  EXPECT_EQ(first_bad.status().message(), "not positive: -1");
  EXPECT_EQ(first_bad.status().code(), Status::Code::kInvalidArgument);
  Result<std::string> second_bad = Join(1, 0, &assigned);
  ASSERT_FALSE(second_bad.ok());
  EXPECT_EQ(second_bad.status().message(), "not positive: 0");
  EXPECT_EQ(assigned, 0);
  Result<std::string> sum_bad = Join(1, std::numeric_limits<int>::max(), &assigned);
  ASSERT_FALSE(sum_bad.ok());
  EXPECT_EQ(sum_bad.status().message(), "overflow");
  EXPECT_EQ(assigned, 0);
}

}  // namespace
}  // namespace loom
