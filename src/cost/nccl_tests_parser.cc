#include "cost/nccl_tests_parser.h"

#include "core/file_io.h"
#include "core/json_reader.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

namespace loom {
namespace {

// The part of each binary's name that a file named after it contains.
constexpr std::array<std::pair<std::string_view, NcclTest>, 5> kTestStems = {{
    {"all_reduce", NcclTest::kAllReduce},
    {"all_gather", NcclTest::kAllGather},
    {"reduce_scatter", NcclTest::kReduceScatter},
    {"alltoall", NcclTest::kAllToAll},
    {"sendrecv", NcclTest::kSendRecv},
}};

std::optional<NcclTest> TestFromName(std::string_view name) {
  for (const auto& [stem, test] : kTestStems) {
    if (name.find(stem) != std::string_view::npos) return test;
  }
  return std::nullopt;
}

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseNumber(std::string_view s) {
  double value = 0;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

// Settles which test wrote the output: the caller's, else the one the output names, else the
// one the file is named after.
Result<NcclTest> ResolveTest(std::optional<NcclTest> given, std::optional<NcclTest> stated,
                             const std::string& file) {
  if (given && stated && *given != *stated) {
    return Status::InvalidArgument(
        file + ": the output comes from " + std::string(kNcclTestNames.Name(*stated)) + ", not " +
        std::string(kNcclTestNames.Name(*given)) + "; pass the file of the test you meant");
  }
  if (given) return *given;
  if (stated) return *stated;
  std::optional<NcclTest> named = TestFromName(std::filesystem::path(file).filename().string());
  if (named) return *named;
  return Status::InvalidArgument(
      file +
      ": cannot tell which nccl-tests binary wrote this; name the file after "
      "it (e.g. all_reduce_perf.txt) or state the test (one of " +
      kNcclTestNames.Choices() + ")");
}

// Where each field sits in a data row, from the column header.
struct Columns {
  size_t count = 0;  // columns, not counting a trailing timestamp (two tokens in a row)
  bool timestamp = false;
  int size = -1, elements = -1, type = -1, redop = -1;
  std::array<int, 3> out_of_place = {-1, -1, -1};  // time, algbw, busbw
  std::array<int, 3> in_place = {-1, -1, -1};
  std::string names;
};

// The column header of a data table, or nullopt for another '#' line. A line with every column
// nccl-tests writes but in another order (an edited or foreign file) sets |problem|: the rows'
// fields are found by the header's positions, and only nccl-tests' own order is safe to read.
std::optional<Columns> ReadColumnHeader(std::string_view after_hash, std::string* problem) {
  std::vector<std::string_view> tokens = Split(after_hash);
  Columns c;
  int times = 0, algbws = 0, busbws = 0;
  for (std::string_view token : tokens) {
    const int i = static_cast<int>(c.count);
    if (token == "timestamp") {
      c.timestamp = true;
      continue;
    }
    if (token == "size") c.size = i;
    if (token == "count") c.elements = i;
    if (token == "type") c.type = i;
    if (token == "redop") c.redop = i;
    if (token == "time" || token == "cputime") (times++ == 0 ? c.out_of_place : c.in_place)[0] = i;
    if (token == "algbw") (algbws++ == 0 ? c.out_of_place : c.in_place)[1] = i;
    if (token == "busbw") (busbws++ == 0 ? c.out_of_place : c.in_place)[2] = i;
    c.names += (c.count == 0 ? "" : " ") + std::string(token);
    ++c.count;
  }
  if (c.size < 0 || times != 2 || algbws != 2 || busbws != 2) return std::nullopt;
  // nccl-tests' order: the row's descriptive fields, then the out-of-place time, algbw and busbw,
  // then the in-place ones (src/common.cu, the header printed by testEngine).
  const std::array<int, 6> timing = {c.out_of_place[0], c.out_of_place[1], c.out_of_place[2],
                                     c.in_place[0],     c.in_place[1],     c.in_place[2]};
  bool ordered = std::is_sorted(timing.begin(), timing.end()) && c.size < timing[0] &&
                 c.elements < timing[0] && c.type < timing[0] && c.redop < timing[0];
  // An in-place-only row drops the out-of-place columns: they must be the block just before.
  ordered = ordered && c.in_place[0] - c.out_of_place[0] == c.in_place[1] - c.out_of_place[1] &&
            c.in_place[0] - c.out_of_place[0] == c.in_place[2] - c.out_of_place[2];
  if (!ordered) {
    *problem = "the column header (" + Abbreviated(c.names, 200) +
               ") is not in nccl-tests' order (size ... then time algbw busbw out of place, then "
               "in place); "
               "use the output as nccl-tests wrote it";
    return std::nullopt;
  }
  return c;
}

// What a text file says besides its rows.
struct TextHeader {
  std::optional<NcclTest> stated;
  std::optional<int64_t> threads, gpus;
  std::optional<NcclTestsSweep> sweep;
  int64_t rank_lines = 0;
  std::set<std::string> hosts;
  std::string gpu_name;
};

// "minBytes 8 maxBytes 8589934592 step: 2(factor)" (or "step: 1048576(bytes)") of the nThread line.
std::optional<NcclTestsSweep> ReadSweep(const std::vector<std::string_view>& tokens) {
  NcclTestsSweep sweep;
  std::optional<int64_t> min, max;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i] == "minBytes") min = ParseInt(tokens[i + 1]);
    if (tokens[i] == "maxBytes") max = ParseInt(tokens[i + 1]);
    if (tokens[i] != "step:") continue;
    const std::string_view step = tokens[i + 1];
    const size_t paren = step.find('(');
    if (paren == std::string_view::npos) continue;
    const std::optional<int64_t> value = ParseInt(step.substr(0, paren));
    if (step.substr(paren) == "(factor)") sweep.step_factor = value;
    if (step.substr(paren) == "(bytes)") sweep.step_bytes = value;
  }
  if (!min || !max || (!sweep.step_factor && !sweep.step_bytes)) return std::nullopt;
  sweep.min_bytes = *min;
  sweep.max_bytes = *max;
  return sweep;
}

void ReadHashLine(std::string_view after_hash, TextHeader* header,
                  std::optional<double>* avg_busbw) {
  std::vector<std::string_view> tokens = Split(after_hash);
  if (tokens.empty()) return;
  if (tokens[0] == "nThread") {
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i] == "nThread") header->threads = ParseInt(tokens[i + 1]);
      if (tokens[i] == "nGpus") header->gpus = ParseInt(tokens[i + 1]);
    }
    header->sweep = ReadSweep(tokens);
  } else if (tokens[0] == "Rank") {
    ++header->rank_lines;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i] == "on") header->hosts.insert(std::string(tokens[i + 1]));
    }
    const size_t bracket = after_hash.find(']');
    if (header->rank_lines == 1 && bracket != std::string_view::npos) {
      header->gpu_name = std::string(Trim(after_hash.substr(bracket + 1)));
    }
  } else if (after_hash.find("Collective test starting:") != std::string_view::npos) {
    header->stated = TestFromName(after_hash.substr(after_hash.find(':') + 1));
  } else if (after_hash.find("Avg bus bandwidth") != std::string_view::npos) {
    std::vector<std::string_view> value = Split(after_hash.substr(after_hash.find(':') + 1));
    if (!value.empty()) *avg_busbw = ParseNumber(value[0]);
  }
}

Status RowError(const std::string& where, const std::string& problem) {
  return Status::InvalidArgument(where + ": " + problem);
}

Status ReadTiming(const std::vector<std::string_view>& tokens, const std::array<int, 3>& at,
                  int shift, const std::string& where, NcclTestsTiming* timing) {
  static constexpr std::array<std::string_view, 3> kWhat = {"a time in us", "an algbw in GB/s",
                                                            "a busbw in GB/s"};
  std::array<double, 3> values{};
  for (size_t k = 0; k < 3; ++k) {
    const size_t i = static_cast<size_t>(at[k] - shift);
    std::optional<double> value = ParseNumber(tokens[i]);
    if (!value) {
      return RowError(where, "expected " + std::string(kWhat[k]) + " in column " +
                                 std::to_string(i + 1) + ", found '" + Abbreviated(tokens[i]) +
                                 "'");
    }
    values[k] = *value;
  }
  *timing = {values[0], values[1], values[2]};
  return Status::Ok();
}

Status ReadDataRow(const std::vector<std::string_view>& tokens, const Columns& c,
                   const std::string& where, NcclTestsRow* row) {
  const size_t n = tokens.size();
  const size_t extra = c.timestamp ? 2 : 0;
  const size_t out_width = static_cast<size_t>(c.in_place[0] - c.out_of_place[0]);
  const bool full = n == c.count || n == c.count + extra;
  const bool in_place_only = n == c.count - out_width || n == c.count - out_width + extra;
  if (!full && !in_place_only) {
    return RowError(where, "expected a data row of " + std::to_string(c.count) + " columns (" +
                               Abbreviated(c.names, 200) + "), found " + std::to_string(n));
  }
  std::optional<int64_t> size = ParseInt(tokens[c.size]);
  if (!size || *size < 0) {
    return RowError(where, "expected the size in bytes (a whole number) in column " +
                               std::to_string(c.size + 1) + ", found '" +
                               Abbreviated(tokens[c.size]) + "'");
  }
  row->size_bytes = *size;
  if (c.elements >= 0) row->count = ParseInt(tokens[c.elements]).value_or(0);
  if (c.type >= 0) row->type = std::string(tokens[c.type]);
  if (c.redop >= 0) row->redop = std::string(tokens[c.redop]);
  row->where = where;
  NcclTestsTiming timing;
  if (full) {
    LOOM_RETURN_IF_ERROR(ReadTiming(tokens, c.out_of_place, 0, where, &timing));
    row->out_of_place = timing;
  }
  LOOM_RETURN_IF_ERROR(
      ReadTiming(tokens, c.in_place, full ? 0 : static_cast<int>(out_width), where, &timing));
  row->in_place = timing;
  return Status::Ok();
}

// A line NCCL itself logs ("host:pid:tid [0] NCCL INFO ..."), interleaved with the table.
bool IsNcclLogLine(std::string_view line) {
  return line.find("NCCL INFO") != std::string_view::npos ||
         line.find("NCCL WARN") != std::string_view::npos;
}

// NCCL's log of NCCL_NVLS_ENABLE=0 under NCCL_DEBUG=INFO: "... NCCL INFO NCCL_NVLS_ENABLE set by
// environment to 0." (ncclLoadParam, src/misc/param.cc, NVIDIA/nccl 5067397c).
bool DisablesNvls(std::string_view line) {
  constexpr std::string_view kSet = "NCCL_NVLS_ENABLE set by environment to ";
  const size_t at = line.find(kSet);
  if (at == std::string_view::npos) return false;
  std::string_view value = line.substr(at + kSet.size());
  while (!value.empty() && (value.back() == '.' || value.back() == ' ' || value.back() == '\r'))
    value.remove_suffix(1);
  return value == "0";
}

std::optional<int64_t> RankCount(const TextHeader& header) {
  if (header.rank_lines > 0) return header.rank_lines;
  if (header.threads && header.gpus) return *header.threads * *header.gpus;
  return std::nullopt;
}

}  // namespace

std::optional<CollectiveKind> CollectiveOf(NcclTest test) {
  switch (test) {
    case NcclTest::kAllReduce:
      return CollectiveKind::kAllReduce;
    case NcclTest::kAllGather:
      return CollectiveKind::kAllGather;
    case NcclTest::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case NcclTest::kAllToAll:
      return CollectiveKind::kAllToAll;
    case NcclTest::kSendRecv:
      return std::nullopt;
  }
  return std::nullopt;
}

Result<NcclTestsRun> ParseNcclTestsText(std::string_view text, const std::string& file,
                                        std::optional<NcclTest> test) {
  NcclTestsRun run;
  run.file = file;
  TextHeader header;
  std::optional<Columns> columns;
  int line_number = 0;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    ++line_number;
    std::string_view view = Trim(line);
    if (view.empty()) continue;
    if (view.front() == '#') {
      view.remove_prefix(1);
      if (!columns) {
        std::string problem;
        columns = ReadColumnHeader(view, &problem);
        if (!problem.empty()) return RowError(file + ":" + std::to_string(line_number), problem);
      }
      ReadHashLine(view, &header, &run.avg_busbw_GBps);
      continue;
    }
    if (IsNcclLogLine(view) && DisablesNvls(view)) run.nvls_disabled = true;
    if (!columns || IsNcclLogLine(view)) continue;
    NcclTestsRow row;
    LOOM_RETURN_IF_ERROR(
        ReadDataRow(Split(view), *columns, file + ":" + std::to_string(line_number), &row));
    run.rows.push_back(std::move(row));
  }
  if (!columns) {
    return Status::InvalidArgument(
        file +
        ": no column header line (\"#  size  count  type  redop  root  time  "
        "algbw  busbw  #wrong  time  algbw  busbw  #wrong\") in " +
        std::to_string(line_number) + " lines; is this nccl-tests output?");
  }
  if (run.rows.empty()) {
    return Status::InvalidArgument(
        file +
        ": the column header is followed by no data rows; the run may have "
        "failed before its first size (see its error lines)");
  }
  LOOM_ASSIGN_OR_RETURN(run.test, ResolveTest(test, header.stated, file));
  run.ranks = RankCount(header);
  if (!header.hosts.empty()) run.nodes = static_cast<int64_t>(header.hosts.size());
  run.gpu_name = header.gpu_name;
  run.sweep = header.sweep;
  return run;
}

namespace {

using Json = nlohmann::json;

// The first of |keys| that |object| has, or nullptr.
const Json* FindAny(const Json& object, std::initializer_list<const char*> keys,
                    std::string* found) {
  for (const char* key : keys) {
    auto it = object.find(key);
    if (it != object.end()) {
      *found = key;
      return &*it;
    }
  }
  return nullptr;
}

Status ReadJsonNumber(const Json& object, std::initializer_list<const char*> keys,
                      const std::string& where, double* out) {
  std::string key;
  const Json* value = FindAny(object, keys, &key);
  std::string names;
  for (const char* k : keys) names += (names.empty() ? "\"" : " or \"") + std::string(k) + "\"";
  if (value == nullptr)
    return Status::InvalidArgument(where + ": expected " + names + ", found none");
  if (!value->is_number() || !std::isfinite(value->get<double>())) {
    return Status::InvalidArgument(where + "." + key + ": expected a finite number, found " +
                                   value->dump());
  }
  *out = value->get<double>();
  return Status::Ok();
}

Status ReadJsonTiming(const Json& result, const char* key, const std::string& where,
                      std::optional<NcclTestsTiming>* out) {
  auto it = result.find(key);
  if (it == result.end() || it->is_null()) return Status::Ok();
  const std::string here = where + "." + key;
  if (!it->is_object())
    return Status::InvalidArgument(here + ": expected an object or null, found " + it->dump());
  NcclTestsTiming timing;
  LOOM_RETURN_IF_ERROR(ReadJsonNumber(*it, {"time", "cpu_time"}, here, &timing.time_us));
  LOOM_RETURN_IF_ERROR(ReadJsonNumber(*it, {"alg_bw", "algBw", "algbw"}, here, &timing.algbw_GBps));
  LOOM_RETURN_IF_ERROR(ReadJsonNumber(*it, {"bus_bw", "busBw", "busbw"}, here, &timing.busbw_GBps));
  *out = timing;
  return Status::Ok();
}

Status ReadJsonRow(const Json& result, const std::string& where, NcclTestsRow* row) {
  if (!result.is_object())
    return Status::InvalidArgument(where + ": expected a result object, found " + result.dump());
  auto size = result.find("size");
  if (size == result.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
    return Status::InvalidArgument(where +
                                   ".size: expected the size in bytes (a whole number), found " +
                                   (size == result.end() ? std::string("none") : size->dump()));
  }
  row->size_bytes = size->get<int64_t>();
  row->where = where;
  auto count = result.find("count");
  if (count != result.end() && count->is_number_integer()) row->count = count->get<int64_t>();
  for (const char* key : {"type", "redop"}) {
    auto it = result.find(key);
    if (it != result.end() && it->is_string())
      (key[0] == 't' ? row->type : row->redop) = it->get<std::string>();
  }
  LOOM_RETURN_IF_ERROR(ReadJsonTiming(result, "out_of_place", where, &row->out_of_place));
  LOOM_RETURN_IF_ERROR(ReadJsonTiming(result, "in_place", where, &row->in_place));
  if (!row->out_of_place && !row->in_place) {
    return Status::InvalidArgument(
        where + ": expected \"in_place\" or \"out_of_place\" timings, found neither");
  }
  return Status::Ok();
}

// Ranks, hosts and GPU name from nccl-tests' "config". Each process reports its first device only,
// so the ranks are the devices listed times the GPUs each process drives.
void ReadJsonConfig(const Json& doc, NcclTestsRun* run) {
  auto config = doc.find("config");
  if (config == doc.end() || !config->is_object()) return;
  auto whole = [&](const char* key, int64_t fallback) {
    auto it = config->find(key);
    return it != config->end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
  };
  const int64_t threads = whole("nthreads", 1);
  const int64_t gpus = whole("ngpus", 0);
  auto devices = config->find("devices");
  const int64_t processes =
      devices != config->end() && devices->is_array() ? static_cast<int64_t>(devices->size()) : 1;
  if (gpus > 0) run->ranks = processes * threads * gpus;
  if (devices == config->end() || !devices->is_array()) return;
  std::set<std::string> hosts;
  for (const Json& device : *devices) {
    if (!device.is_object()) continue;
    if (device.contains("hostname") && device["hostname"].is_string())
      hosts.insert(device["hostname"].get<std::string>());
    if (run->gpu_name.empty() && device.contains("device_info") &&
        device["device_info"].is_string()) {
      run->gpu_name = device["device_info"].get<std::string>();
    }
  }
  if (!hosts.empty()) run->nodes = static_cast<int64_t>(hosts.size());
}

std::optional<NcclTest> StatedJsonTest(const Json& doc) {
  if (!doc.is_object()) return std::nullopt;
  auto args = doc.find("args");
  if (args == doc.end() || !args->is_array() || args->empty() || !(*args)[0].is_string())
    return std::nullopt;
  return TestFromName(std::filesystem::path((*args)[0].get<std::string>()).filename().string());
}

}  // namespace

Result<NcclTestsRun> ParseNcclTestsJson(std::string_view text, const std::string& file,
                                        std::optional<NcclTest> test) {
  LOOM_ASSIGN_OR_RETURN(const Json doc, ParseJson(text, file));
  const bool bare = doc.is_array();
  if (!bare && !(doc.is_object() && doc.contains("results") && doc["results"].is_array())) {
    return Status::InvalidArgument(
        file +
        ": expected an object with a \"results\" array (nccl-tests -J) or an "
        "array of result objects, found " +
        std::string(doc.type_name()));
  }
  NcclTestsRun run;
  run.file = file;
  const Json& results = bare ? doc : doc["results"];
  for (size_t i = 0; i < results.size(); ++i) {
    NcclTestsRow row;
    const std::string where = file + ": " + (bare ? "" : "results") + "[" + std::to_string(i) + "]";
    LOOM_RETURN_IF_ERROR(ReadJsonRow(results[i], where, &row));
    run.rows.push_back(std::move(row));
  }
  if (run.rows.empty())
    return Status::InvalidArgument(file + ": \"results\" is empty; the run measured no size");
  LOOM_ASSIGN_OR_RETURN(run.test, ResolveTest(test, StatedJsonTest(doc), file));
  if (!bare) {
    ReadJsonConfig(doc, &run);
    auto avg = doc.find("average_bus_bandwidth");
    if (avg != doc.end() && avg->is_object() && avg->contains("bandwidth") &&
        (*avg)["bandwidth"].is_number()) {
      run.avg_busbw_GBps = (*avg)["bandwidth"].get<double>();
    }
  }
  return run;
}

Result<NcclTestsRun> ReadNcclTestsFile(const std::string& path, std::optional<NcclTest> test) {
  LOOM_ASSIGN_OR_RETURN(const std::string content,
                        ReadInputFile(path, "check the path of the nccl-tests output"));
  const size_t first = content.find_first_not_of(" \t\r\n");
  const bool json = first != std::string::npos && (content[first] == '{' || content[first] == '[');
  return json ? ParseNcclTestsJson(content, path, test) : ParseNcclTestsText(content, path, test);
}

}  // namespace loom
