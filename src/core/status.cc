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
  }
  return message_;
}

}  // namespace loom
