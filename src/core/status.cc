#include "core/status.h"

namespace loom {

std::string Status::ToString() const {
  switch (code_) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "invalid argument: " + message_;
    case Code::kNotFound:
      return "not found: " + message_;
    case Code::kIoError:
      return "I/O error: " + message_;
    case Code::kUnimplemented:
      return "unimplemented: " + message_;
    case Code::kResourceExhausted:
      return "resource exhausted: " + message_;
    case Code::kDeadlineExceeded:
      return "deadline exceeded: " + message_;
    case Code::kUnavailable:
      return "unavailable: " + message_;
    case Code::kInternal:
      return "internal: " + message_;
  }
  return message_;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

Status Status::WithSuffix(std::string_view more) const {
  if (ok()) return *this;
  return Status(code_, message_ + std::string(more));
}

}  // namespace loom
