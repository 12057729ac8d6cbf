#ifndef LOOM_CLI_VALIDATORS_H_
#define LOOM_CLI_VALIDATORS_H_

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace loom {

// Numeric checks for command-line options. CLI11's own (PositiveNumber, Range) let NaN through,
// since every comparison with NaN is false, and print their bounds in full ("0.000000 to
// 179769313486231570..."); these reject NaN and infinities and state the bound in words.

// A finite number > 0.
CLI::Validator Positive();
// A finite number >= 0.
CLI::Validator NonNegative();
// A finite number in [low, high].
CLI::Validator Between(double low, double high);

// One of |names|, for ->transform(): a value that matches one name when case is ignored, and no
// other, becomes that name (`--schedule 1F1B` is 1f1b); any other value is refused with the names
// and the nearest of them. Its help reads as CLI::IsMember's: {a,b,c}.
CLI::Validator Choice(std::vector<std::string> names);

}  // namespace loom

#endif  // LOOM_CLI_VALIDATORS_H_
