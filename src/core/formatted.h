#ifndef LOOM_CORE_FORMATTED_H_
#define LOOM_CORE_FORMATTED_H_

#include <cstdint>
#include <cstdio>
#include <string>

namespace loom {

// std::snprintf into a std::string, for table rows: Formatted("%8.2f %s", time_us, name).
// REQUIRES: |format| and |args| match as for printf.
template <typename... Args>
std::string Formatted(const char* format, Args... args) {
  const int size = std::snprintf(nullptr, 0, format, args...);
  if (size <= 0) return "";
  std::string text(static_cast<size_t>(size) + 1, '\0');
  std::snprintf(text.data(), text.size(), format, args...);
  text.resize(static_cast<size_t>(size));
  return text;
}

// An exact byte count for keys and messages: "256 MiB" when |bytes| is whole mebibytes (and
// positive), else "1000 B".
inline std::string WholeBytes(int64_t bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  return bytes % kMiB == 0 && bytes > 0 ? std::to_string(bytes / kMiB) + " MiB"
                                        : std::to_string(bytes) + " B";
}

}  // namespace loom

#endif  // LOOM_CORE_FORMATTED_H_
