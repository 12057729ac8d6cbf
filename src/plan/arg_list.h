#ifndef LOOM_PLAN_ARG_LIST_H_
#define LOOM_PLAN_ARG_LIST_H_

#include <charconv>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/formatted.h"
#include "spec/model.h"

// Helpers shared by the launch-configuration emitters (megatron_args.cc, deepspeed_config.cc):
// command lines built one token at a time, and the messages of their errors.
namespace loom::arg_list {

using Args = std::vector<std::string>;

inline void Add(Args& out, std::string_view flag) { out.emplace_back(flag); }
inline void Add(Args& out, std::string_view flag, std::string_view value) {
  out.emplace_back(flag);
  out.emplace_back(value);
}
inline void Add(Args& out, std::string_view flag, int64_t value) {
  Add(out, flag, std::to_string(value));
}

// The shortest decimal that reads back as |value|: "1.25", "1".
inline std::string ShortestDecimal(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return error == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

// |lines| joined by newlines, for one InvalidArgument that lists every problem.
inline std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : "\n") + line;
  return out;
}

}  // namespace loom::arg_list

#endif  // LOOM_PLAN_ARG_LIST_H_
