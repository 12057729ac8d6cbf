#ifndef LOOM_CORE_STATUS_H_
#define LOOM_CORE_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace loom {

// The outcome of an operation that can fail on bad input. Library code returns a Status
// (or a Result<T>) instead of printing or exiting; only src/cli/ turns it into a message.
// A message names the input, the key and the fix, e.g.
//   "models/x.json: num_attention_heads (30) is not divisible by tp (8); ..."
class Status {
 public:
  // kResourceExhausted: out of memory; kDeadlineExceeded: an operation that did not finish in time
  // (a hung collective); kUnavailable: hardware the operation needs is not there (no GPU);
  // kInternal: a library (CUDA, cuBLASLt, cuDNN, NCCL, MPI) reported an error.
  enum class Code {
    kOk,
    kInvalidArgument,
    kNotFound,
    kIoError,
    kUnimplemented,
    kResourceExhausted,
    kDeadlineExceeded,
    kUnavailable,
    kInternal,
  };

  Status() = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string message) {
    return Status(Code::kInvalidArgument, std::move(message));
  }
  static Status NotFound(std::string message) {
    return Status(Code::kNotFound, std::move(message));
  }
  static Status IoError(std::string message) { return Status(Code::kIoError, std::move(message)); }
  static Status Unimplemented(std::string message) {
    return Status(Code::kUnimplemented, std::move(message));
  }

  static Status ResourceExhausted(std::string message) {
    return Status(Code::kResourceExhausted, std::move(message));
  }
  static Status DeadlineExceeded(std::string message) {
    return Status(Code::kDeadlineExceeded, std::move(message));
  }
  static Status Unavailable(std::string message) {
    return Status(Code::kUnavailable, std::move(message));
  }
  static Status Internal(std::string message) {
    return Status(Code::kInternal, std::move(message));
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns "<code name>: <message>", or "OK".
  std::string ToString() const;

  // The same error with "<context>: " in front of its message, e.g. the op or task it happened in;
  // the code is kept, so callers still tell out-of-memory from unsupported. OK stays OK.
  Status WithContext(std::string_view context) const;
  // The same error with |more| after its message ("; aborting failed too: ..."), the code kept.
  // OK stays OK.
  Status WithSuffix(std::string_view more) const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value of type T or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : value_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(value_).ok() && "a Result holds an error Status, never OK");
  }

  bool ok() const { return std::holds_alternative<T>(value_); }

  // REQUIRES: !ok().
  const Status& status() const { return std::get<Status>(value_); }

  // REQUIRES: ok().
  const T& value() const& { return std::get<T>(value_); }
  T& value() & { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }

  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace loom

// Returns from the enclosing function if |expr| (a Status) is not OK.
#define LOOM_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::loom::Status loom_status_ = (expr);        \
    if (!loom_status_.ok()) return loom_status_; \
  } while (false)

// Evaluates |rexpr| (a Result<T>); returns its Status from the enclosing function if it is not
// OK, else moves its value into |lhs|, which may declare a variable:
//   LOOM_ASSIGN_OR_RETURN(ModelSpec model, LoadModel(path));
//   LOOM_ASSIGN_OR_RETURN(step.costs, CostChunks(...));
// |rexpr| may hold commas; |lhs| may not (name such a type through an alias or auto).
#define LOOM_ASSIGN_OR_RETURN(lhs, ...) \
  LOOM_ASSIGN_OR_RETURN_IMPL_(LOOM_STATUS_CONCAT_(loom_result_, __LINE__), lhs, __VA_ARGS__)
#define LOOM_ASSIGN_OR_RETURN_IMPL_(result, lhs, ...) \
  auto result = (__VA_ARGS__);                        \
  if (!result.ok()) return result.status();           \
  lhs = std::move(result).value()
#define LOOM_STATUS_CONCAT_(a, b) LOOM_STATUS_CONCAT_INNER_(a, b)
#define LOOM_STATUS_CONCAT_INNER_(a, b) a##b

#endif  // LOOM_CORE_STATUS_H_
