#ifndef LOOM_CLI_VALIDATORS_H_
#define LOOM_CLI_VALIDATORS_H_

#include <string>

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

}  // namespace loom

#endif  // LOOM_CLI_VALIDATORS_H_
