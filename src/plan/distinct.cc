#include "plan/distinct.h"

#include <algorithm>
#include <string_view>

#include "plan/search_space.h"

namespace loom {
namespace {

// The --fix keys the search varies together, under one setting's name.
std::string_view SettingOfKey(std::string_view key) {
  if (key == "schedule" || key == "vpp" || key == "microbatch_group") return "schedule";
  if (key == "recompute" || key == "recompute_layers") return "recompute";
  if (key == "overlap_grad_reduce" || key == "overlap_param_gather" || key == "tp_comm_overlap")
    return "overlap";
  if (key == "first_stage_layers" || key == "last_stage_layers") return "stage_layers";
  return key;
}

// A row being formed: its members best first, and the spread of their steps and scores.
struct Row {
  std::vector<RankedPlan> members;
  std::string setting;  // what the members vary in; empty while the row has one member
  double min_step = 0, max_step = 0, min_score = 0, max_score = 0;
};

bool WithinTolerance(double low, double high) { return high < low * (1 + kDistinctTolerance); }

// Whether |plan| joins |row| (see GroupDistinct).
bool Joins(const Row& row, const RankedPlan& plan) {
  const std::string setting = OnlyDifferingSetting(row.members.front().strategy, plan.strategy);
  if (setting.empty() || (!row.setting.empty() && setting != row.setting)) return false;
  return WithinTolerance(std::min(row.min_step, plan.step_time_s),
                         std::max(row.max_step, plan.step_time_s)) &&
         WithinTolerance(std::min(row.min_score, plan.score), std::max(row.max_score, plan.score));
}

void Add(Row& row, const RankedPlan& plan) {
  if (row.members.empty()) {
    row.min_step = row.max_step = plan.step_time_s;
    row.min_score = row.max_score = plan.score;
  } else {
    row.setting = OnlyDifferingSetting(row.members.front().strategy, plan.strategy);
    row.min_step = std::min(row.min_step, plan.step_time_s);
    row.max_step = std::max(row.max_step, plan.step_time_s);
    row.min_score = std::min(row.min_score, plan.score);
    row.max_score = std::max(row.max_score, plan.score);
  }
  row.members.push_back(plan);
}

}  // namespace

std::vector<Setting> SettingsOf(const Strategy& strategy) {
  std::vector<Setting> settings;
  const std::string text = ConstraintText(strategy);
  for (size_t begin = 0; begin <= text.size();) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string_view pair = std::string_view(text).substr(begin, end - begin);
    const std::string_view name = SettingOfKey(pair.substr(0, pair.find('=')));
    if (!settings.empty() && settings.back().name == name) {
      settings.back().value += "," + std::string(pair);
    } else {
      settings.push_back({std::string(name), std::string(pair)});
    }
    begin = end + 1;
  }
  return settings;
}

std::string OnlyDifferingSetting(const Strategy& a, const Strategy& b) {
  const std::vector<Setting> x = SettingsOf(a), y = SettingsOf(b);
  std::string differing;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (x[i].value == y[i].value) continue;
    if (!differing.empty()) return "";
    differing = x[i].name;
  }
  return differing;
}

void SettingValueCounter::Add(const Strategy& strategy) {
  for (Setting& s : SettingsOf(strategy)) values_[s.name].insert(std::move(s.value));
}

int64_t SettingValueCounter::Most() const {
  size_t most = 1;
  for (const auto& [name, values] : values_) most = std::max(most, values.size());
  return static_cast<int64_t>(most);
}

std::vector<RankedPlan> GroupDistinct(const std::vector<RankedPlan>& ranked, int64_t max_rows) {
  std::vector<Row> rows;
  for (const RankedPlan& plan : ranked) {
    // Rows past |max_rows| are never returned, and a plan joins the first row it can: leaving them
    // out changes no returned row.
    auto row = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return Joins(r, plan); });
    if (row != rows.end()) {
      Add(*row, plan);
    } else if (static_cast<int64_t>(rows.size()) < max_rows) {
      Add(rows.emplace_back(), plan);
    }
  }
  std::vector<RankedPlan> out;
  for (Row& row : rows) {
    RankedPlan best = std::move(row.members.front());
    best.variants.assign(std::make_move_iterator(row.members.begin() + 1),
                         std::make_move_iterator(row.members.end()));
    best.variant_setting = row.setting;
    out.push_back(std::move(best));
  }
  return out;
}

}  // namespace loom
