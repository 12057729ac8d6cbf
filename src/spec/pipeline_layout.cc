#include "spec/pipeline_layout.h"
#include "core/formatted.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace loom {
namespace {}  // namespace

std::string PipelineLayoutText(const std::vector<int64_t>& layers) {
  // One stage's text without its separator: E and L where they belong, t or t*n for the layers.
  const auto stage_text = [&](size_t v) {
    std::string text = v == 0 ? "E" : "";
    if (layers[v] == 1) text += "t";
    if (layers[v] > 1) text += "t*" + std::to_string(layers[v]);
    if (v + 1 == layers.size()) text += "L";
    return text;
  };
  std::string out;
  for (size_t v = 0; v < layers.size();) {
    size_t run = 1;  // equal stages after v, none of them an end
    if (v > 0) {
      while (v + run + 1 < layers.size() && layers[v + run] == layers[v]) ++run;
    }
    const std::string text = stage_text(v);
    if (run > 1) {
      out += "(" + text + "|)*" + std::to_string(run);
    } else {
      out += text + (v + 1 < layers.size() ? "|" : "");
    }
    v += run;
  }
  return out;
}

Result<std::vector<int64_t>> ParsePipelineLayout(const std::string& text, int64_t pp) {
  constexpr size_t kMaxText = 1 << 16;
  if (text.size() > kMaxText) {
    return Status::InvalidArgument(
        StrCat("--pipeline-layout: ", text.size(), " characters; a layout is at most ", kMaxText));
  }
  // Unrolls "(...)*n" and "x*n" as Megatron-core's parse_str_to_list does, after dropping its
  // cosmetic commas; a repeat count is at most 2^20 and the unrolled text at most 2^24 characters.
  std::string s;
  for (char c : text) {
    if (c != ',' && c != ' ') s += c;
  }
  constexpr size_t kMaxUnrolled = size_t{1} << 24;
  const auto count_at = [&](size_t pos, size_t* end) -> int64_t {
    int64_t n = 0;
    size_t i = pos;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && n <= (int64_t{1} << 20))
      n = n * 10 + (s[i++] - '0');
    *end = i;
    return i == pos || n > (int64_t{1} << 20) ? -1 : n;
  };
  for (size_t open; (open = s.find('(')) != std::string::npos;) {
    const size_t close = s.find(')', open);
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != '*') {
      return Status::InvalidArgument(
          StrCat("--pipeline-layout \"", text.substr(0, 80),
                 "\": every \"(\" needs a \")*n\" (Megatron-core's syntax, e.g. "
                 "\"E|(t*8|)*14t*7L\")"));
    }
    size_t end = 0;
    const int64_t n = count_at(close + 2, &end);
    const std::string body = s.substr(open + 1, close - open - 1);
    if (n < 0 || body.find('(') != std::string::npos ||
        body.size() * static_cast<size_t>(n) > kMaxUnrolled) {
      return Status::InvalidArgument(
          StrCat("--pipeline-layout \"", text.substr(0, 80),
                 "\": \"(...)*n\" takes a count from 0 to 2^20 and no nested parentheses"));
    }
    std::string unrolled;
    for (int64_t i = 0; i < n; ++i) unrolled += body;
    s = s.substr(0, open) + unrolled + s.substr(end);
    if (s.size() > kMaxUnrolled) {
      return Status::InvalidArgument(StrCat("--pipeline-layout \"", text.substr(0, 80),
                                            "\": unrolls to more than ", kMaxUnrolled,
                                            " characters; no pipeline has that many stages"));
    }
  }
  std::vector<int64_t> layers(1, 0);
  bool embedding = false, loss = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    int64_t times = 1;
    if (i + 1 < s.size() && s[i + 1] == '*') {
      size_t end = 0;
      times = count_at(i + 2, &end);
      if (times < 0) {
        return Status::InvalidArgument(StrCat("--pipeline-layout \"", text.substr(0, 80), "\": \"",
                                              c, "*\" takes a count from 0 to 2^20"));
      }
      i = end - 1;
    }
    if (c == '|') {
      if (loss) break;  // checked below: L must be last
      if (layers.size() + static_cast<size_t>(times) > kMaxUnrolled) {
        return Status::InvalidArgument(
            "--pipeline-layout: more virtual stages than any pipeline has");
      }
      for (int64_t k = 0; k < times; ++k) layers.push_back(0);
    } else if (c == 't') {
      if (loss)
        return Status::InvalidArgument(
            "--pipeline-layout: \"L\" (the loss) must be the last layer");
      layers.back() += times;
    } else if (c == 'E') {
      if (embedding || layers.size() > 1 || layers.back() > 0 || times != 1) {
        return Status::InvalidArgument(StrCat("--pipeline-layout \"", text.substr(0, 80),
                                              "\": \"E\" (the embedding) comes once, first"));
      }
      embedding = true;
    } else if (c == 'L') {
      if (loss || times != 1)
        return Status::InvalidArgument("--pipeline-layout: \"L\" (the loss) comes once");
      loss = true;
    } else {
      return Status::InvalidArgument(
          StrCat("--pipeline-layout \"", text.substr(0, 80), "\": character '", c,
                 "' is not a layer; Megatron-core's layouts use E (embedding), t "
                 "(transformer layer), L (loss) and | between virtual stages",
                 c == 'm' ? "; m (multi-token prediction) is not modelled by loom" : ""));
    }
  }
  if (!embedding || !loss || s.empty() || s.back() != 'L') {
    return Status::InvalidArgument(
        StrCat("--pipeline-layout \"", text.substr(0, 80),
               "\": a layout starts with E (the embedding) and ends with L (the loss), "
               "e.g. \"E|(t*8|)*14t*7L\""));
  }
  if (pp < 1 || layers.size() % static_cast<size_t>(pp) != 0) {
    return Status::InvalidArgument(StrCat("--pipeline-layout has ", layers.size(),
                                          " virtual stages, not a multiple of --pp ", pp,
                                          " (Megatron-core takes pp * vpp of them)"));
  }
  return layers;
}

int64_t SmallestMicrobatchGroup(int64_t micro_batches, int64_t pp) {
  for (int64_t group = pp; group <= micro_batches; ++group) {
    const int64_t rest = micro_batches % group;
    if (rest == 0 || rest >= pp) return group;
  }
  return 0;
}

}  // namespace loom
