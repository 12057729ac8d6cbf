#ifndef LOOM_CORE_ENUM_NAMES_H_
#define LOOM_CORE_ENUM_NAMES_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom {

// One table per enum maps values to the names users type (in files and on the command line),
// so that parsing, printing and the lists in error messages all come from one place.
template <typename Enum, size_t N>
class EnumNames {
 public:
  constexpr explicit EnumNames(std::array<std::pair<Enum, std::string_view>, N> entries)
      : entries_(entries) {}

  std::optional<Enum> Parse(std::string_view name) const {
    for (const auto& [value, text] : entries_) {
      if (text == name) return value;
    }
    return std::nullopt;
  }

  std::string_view Name(Enum value) const {
    for (const auto& [v, text] : entries_) {
      if (v == value) return text;
    }
    return "?";
  }

  // Every name, in table order (for command-line choice checks).
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& entry : entries_) names.emplace_back(entry.second);
    return names;
  }

  // "a|b|c", for help texts and error messages.
  std::string Choices() const {
    std::string out;
    for (const auto& [value, text] : entries_) {
      if (!out.empty()) out += '|';
      out += text;
    }
    return out;
  }

 private:
  std::array<std::pair<Enum, std::string_view>, N> entries_;
};

}  // namespace loom

#endif  // LOOM_CORE_ENUM_NAMES_H_
