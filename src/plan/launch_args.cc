#include "plan/launch_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "core/formatted.h"

namespace loom {
namespace {

bool EndsWithText(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

// torchrun's --nnodes and --nproc_per_node (or --nproc-per-node), when both are numbers.
std::optional<int64_t> TorchrunWorldSize(const std::vector<std::string>& words) {
  std::optional<int64_t> nodes, per_node;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string flag = words[i], value;
    if (const size_t eq = flag.find('='); eq != std::string::npos && flag.rfind("--", 0) == 0) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < words.size()) {
      value = words[i + 1];
    }
    if (flag == "--nnodes") nodes = WholeNumberOf(value);
    if (flag == "--nproc_per_node" || flag == "--nproc-per-node") per_node = WholeNumberOf(value);
  }
  constexpr int64_t kMaxGpus = int64_t{1} << 24;  // beyond any cluster; keeps the product small
  if (nodes && per_node && *nodes > 0 && *per_node > 0 && *nodes <= kMaxGpus &&
      *per_node <= kMaxGpus) {
    return *nodes * *per_node;
  }
  return std::nullopt;
}

}  // namespace

std::string GivenFlag::Text() const {
  std::string text = flag;
  for (const std::string& v : values) text += " " + v;
  return text;
}

std::optional<int64_t> WholeNumberOf(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> NumberOf(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

bool SameValues(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::optional<double> x = NumberOf(a[i]), y = NumberOf(b[i]);
    if (x && y ? *x != *y : a[i] != b[i]) return false;
  }
  return true;
}

Result<LaunchArguments> SplitLaunchArguments(const std::vector<std::string>& words,
                                             const std::string& file) {
  LaunchArguments out;
  const auto script = std::find_if(words.begin(), words.end(),
                                   [](const std::string& w) { return EndsWithText(w, ".py"); });
  if (script != words.end()) {
    out.launcher_world_size = TorchrunWorldSize({words.begin(), script});
  }
  GivenFlag* last = nullptr;
  for (auto it = script == words.end() ? words.begin() : script + 1; it != words.end(); ++it) {
    const std::string& word = *it;
    if (word.rfind("--", 0) == 0 && word.size() > 2) {
      std::string flag = word;
      std::vector<std::string> values;
      if (const size_t eq = word.find('='); eq != std::string::npos) {
        flag = word.substr(0, eq);
        values.push_back(word.substr(eq + 1));
      }
      if (out.given.count(flag)) {
        out.notes.push_back(flag +
                            " is given more than once; the last one counts, as argparse takes it");
      } else {
        out.order.push_back(flag);
      }
      last = &(out.given[flag] = GivenFlag{flag, values});
      continue;
    }
    if (last == nullptr) {
      return Status::InvalidArgument(StrCat(file, ": \"", word,
                                            "\" comes before any flag; the arguments of "
                                            "pretrain_gpt.py are --flags with their values"));
    }
    if (!word.empty() && word[0] == '$') {
      return Status::InvalidArgument(StrCat(file, ": ", last->flag, " ", word,
                                            ": a shell variable; loom reads the arguments as "
                                            "written, so give its value"));
    }
    last->values.push_back(word);
  }
  return out;
}

std::optional<std::string> LaunchArgumentReader::Text(std::string_view flag) {
  const auto it = given_.find(flag);
  if (it == given_.end()) return std::nullopt;
  if (it->second.values.size() != 1) {
    errors_.push_back(StrCat(file_, ": ", flag, " takes one value; it has ",
                             it->second.values.size(), " (", it->second.Text(), ")"));
    return std::nullopt;
  }
  return it->second.values[0];
}

int64_t LaunchArgumentReader::Int(std::string_view flag, int64_t fallback, int64_t low) {
  const std::optional<std::string> text = Text(flag);
  if (!text) return fallback;
  const std::optional<int64_t> value = WholeNumberOf(*text);
  if (!value || *value < low || *value > kMaxValue) {
    errors_.push_back(StrCat(file_, ": ", flag, " ", *text, " is not a whole number from ", low,
                             " to 2^30; give it one"));
    return fallback;
  }
  return *value;
}

std::optional<double> LaunchArgumentReader::Real(std::string_view flag) {
  const std::optional<std::string> text = Text(flag);
  if (!text) return std::nullopt;
  std::optional<double> value = NumberOf(*text);
  if (!value || *value < 0) {
    errors_.push_back(StrCat(file_, ": ", flag, " ", *text, " is not a number of at least 0"));
  }
  return value;
}

bool LaunchArgumentReader::Switch(std::string_view flag) {
  const auto it = given_.find(flag);
  if (it == given_.end()) return false;
  if (!it->second.values.empty()) {
    errors_.push_back(StrCat(file_, ": ", flag, " takes no value; it has ", it->second.Text()));
  }
  return true;
}

void LaunchArgumentReader::Error(std::string message) {
  errors_.push_back(StrCat(file_, ": ", message));
}

Status LaunchArgumentReader::Finish() const {
  if (errors_.empty()) return Status::Ok();
  std::string message;
  for (const std::string& e : errors_) message += (message.empty() ? "" : "\n") + e;
  return Status::InvalidArgument(message);
}

void ReadOptimizerFlag(LaunchArgumentReader& r, Strategy& s) {
  const std::string optimizer = r.Text("--optimizer").value_or("adam");
  if (optimizer == "adam") {
    s.optimizer = Optimizer::kAdam;
  } else if (optimizer == "sgd") {
    s.optimizer = Optimizer::kSgd;
  } else {
    r.Error("--optimizer " + optimizer + ": loom simulates adam and sgd");
  }
}

bool ReadDropout(LaunchArgumentReader& r, std::vector<std::string>& notes) {
  const double attention = r.Real("--attention-dropout").value_or(0.1);
  const double hidden = r.Real("--hidden-dropout").value_or(0.1);
  const bool dropout = attention > 0 || hidden > 0;
  if (dropout && (attention == 0 || hidden == 0)) {
    notes.push_back(StrCat("--attention-dropout ", attention, " --hidden-dropout ", hidden,
                           ": loom runs dropout in both places or in neither; it runs both"));
  }
  return dropout;
}

}  // namespace loom
