#ifndef LOOM_CORE_FORMATTED_H_
#define LOOM_CORE_FORMATTED_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
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

// Its arguments streamed one after another, for messages:
//   StrCat("--tp ", tp, ": hidden_size (", h, ") ...").
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  ((out << args), ...);
  return out.str();
}

// |value| with |digits| decimals: Fixed(2.345, 2) -> "2.35" (printf rounding).
inline std::string Fixed(double value, int digits) { return Formatted("%.*f", digits, value); }

// |fraction| as a percentage with one decimal: 0.1234 -> "12.3%". A value that rounds to zero
// reads "0.0%", never "-0.0%" (a term summed from differences of times can land a hair below 0).
inline std::string Percent(double fraction) {
  if (std::abs(fraction) < 0.0005) fraction = 0;
  return Fixed(fraction * 100, 1) + "%";
}

}  // namespace loom

#endif  // LOOM_CORE_FORMATTED_H_
