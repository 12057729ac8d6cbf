#ifndef LOOM_CORE_FORMATTED_H_
#define LOOM_CORE_FORMATTED_H_

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

}  // namespace loom

#endif  // LOOM_CORE_FORMATTED_H_
