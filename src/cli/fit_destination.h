#ifndef LOOM_CLI_FIT_DESTINATION_H_
#define LOOM_CLI_FIT_DESTINATION_H_

#include <string>

#include "core/status.h"

namespace loom {

// Where `loom fit` writes a calibrated copy of a hardware (or framework) file.
struct FitDestinationOptions {
  bool dry_run = false;   // write nothing
  std::string output;     // --output FILE: write there (replacing it)
  bool in_place = false;  // --in-place: rewrite the input file itself
  bool force = false;     // --force: replace an earlier fitted copy
};

// "hardware/gpus/x.json" -> "hardware/gpus/x.fitted.json": beside the input, so that the relative
// paths inside it (a cluster's "gpu": "../gpus/...") resolve the same. A name without ".json"
// gets ".fitted.json" appended.
std::string FittedPath(const std::string& input);

// The file the fit of |input| writes: "" with dry_run, |output| when given, |input| with in_place,
// else FittedPath(input). Errors: InvalidArgument when the fitted copy exists and |force| is not
// set, naming it and the flags that write anyway.
Result<std::string> FitDestination(const FitDestinationOptions& options, const std::string& input);

}  // namespace loom

#endif  // LOOM_CLI_FIT_DESTINATION_H_
