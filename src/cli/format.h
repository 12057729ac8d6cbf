#ifndef LOOM_CLI_FORMAT_H_
#define LOOM_CLI_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/simulator.h"

namespace loom {

// "70.55 B", "12.88 B", "46.70 M": a count with an SI suffix and 4 significant digits.
std::string HumanCount(double count);

// "131.42 GiB": a byte count in binary units.
std::string HumanBytes(double bytes);

// "450.6 GFLOP", "1.35 TFLOP".
std::string HumanFlops(double flops);

// "70,553,706,496": digits grouped by thousands.
std::string GroupedDigits(int64_t value);

// |items| joined by |separator|: "a, b, c".
std::string JoinedList(const std::vector<std::string>& items, std::string_view separator = ", ");

// {"compute_s", "exposed_comm_s", "bubble_s", "optimizer_s"}: where a simulated step went, as
// `loom simulate --json` and `loom plan --json` write it.
nlohmann::ordered_json BreakdownJson(const StepBreakdown& breakdown);

}  // namespace loom

#endif  // LOOM_CLI_FORMAT_H_
