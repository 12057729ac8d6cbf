#include "cli/fit_destination.h"

#include <filesystem>
#include <system_error>

namespace loom {

std::string FittedPath(const std::string& input) {
  std::filesystem::path path(input);
  if (path.extension() == ".json") path.replace_extension();
  return path.string() + ".fitted.json";
}

Result<std::string> FitDestination(const FitDestinationOptions& options, const std::string& input) {
  if (options.dry_run) return std::string();
  if (!options.output.empty()) return options.output;
  if (options.in_place) return input;
  const std::string fitted = FittedPath(input);
  std::error_code error;
  if (std::filesystem::exists(fitted, error) && !options.force) {
    return Status::InvalidArgument(
        fitted + " exists (an earlier fit of " + input +
        "); pass --force to replace it, --output FILE to write elsewhere, or --in-place "
        "to rewrite " +
        input + " itself");
  }
  return fitted;
}

}  // namespace loom
