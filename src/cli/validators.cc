#include "cli/validators.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <utility>

#include "cli/format.h"
#include "core/json_reader.h"

namespace loom {
namespace {

// |text| as a finite double, or NaN when it is not a number at all (strtod reads "nan" and "inf"
// too).
double ReadNumber(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nan("");
  return value;
}

// Shortest exact form: 1000000, 0.001.
std::string Show(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

CLI::Validator NumberCheck(std::string description, std::function<bool(double)> ok,
                           std::string wanted) {
  return CLI::Validator(
      [ok, wanted](std::string& input) -> std::string {
        const double value = ReadNumber(input);
        if (std::isfinite(value) && ok(value)) return "";
        return "got '" + input + "'; it must be " + wanted;
      },
      std::move(description));
}

}  // namespace

CLI::Validator Positive() {
  return NumberCheck(
      "POSITIVE", [](double v) { return v > 0; }, "a number greater than 0");
}

CLI::Validator NonNegative() {
  return NumberCheck(
      "NONNEGATIVE", [](double v) { return v >= 0; }, "a number of at least 0");
}

CLI::Validator Between(double low, double high) {
  return NumberCheck(
      "[" + Show(low) + " - " + Show(high) + "]",
      [low, high](double v) { return v >= low && v <= high; },
      "a number from " + Show(low) + " to " + Show(high));
}

CLI::Validator Choice(std::vector<std::string> names) {
  const std::string listed = "{" + JoinedList(names, ",") + "}";
  auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
  };
  return CLI::Validator(
      [names = std::move(names), listed, lower](std::string& input) -> std::string {
        if (std::find(names.begin(), names.end(), input) != names.end()) return "";
        const std::string* match = nullptr;
        int matches = 0;
        for (const std::string& name : names) {
          if (lower(name) == lower(input)) match = &name, ++matches;
        }
        if (matches == 1) {
          input = *match;
          return "";
        }
        std::vector<std::string> lowered;
        for (const std::string& name : names) lowered.push_back(lower(name));
        const std::optional<NearName> nearest = NearestName(lower(input).substr(0, 64), lowered, 3);
        return Abbreviated(input) + " is not one of " + listed +
               (nearest ? "; did you mean " + names[nearest->index] + "?" : "");
      },
      listed);
}

}  // namespace loom
