#include "reference/steptime_tables.h"

#include <algorithm>
#include <map>
#include <utility>

#include "spec/step_intervals.h"

namespace loom {

Ordering OrderingOf(const FidelityTable& table, const std::vector<std::string>& jobs) {
  std::map<std::string, std::vector<size_t>> by_job;
  for (size_t i = 0; i < table.rows.size() && i < jobs.size(); ++i) {
    if (table.rows[i].ok()) by_job[jobs[i]].push_back(i);
  }
  Ordering out;
  double regret_sum = 0;
  for (const auto& [job, rows] : by_job) {
    if (rows.size() < 2) continue;
    ++out.jobs;
    for (size_t a = 0; a < rows.size(); ++a) {
      for (size_t b = a + 1; b < rows.size(); ++b) {
        const FidelityRow& x = table.rows[rows[a]];
        const FidelityRow& y = table.rows[rows[b]];
        if (x.measured == y.measured) continue;
        ++out.pairs;
        if ((x.predicted < y.predicted) == (x.measured < y.measured) &&
            x.predicted != y.predicted) {
          ++out.pairs_in_order;
        }
      }
    }
    size_t pick = rows.front(), best = rows.front();
    for (size_t i : rows) {
      if (table.rows[i].predicted < table.rows[pick].predicted) pick = i;
      if (table.rows[i].measured < table.rows[best].measured) best = i;
    }
    const double regret = table.rows[pick].measured / table.rows[best].measured - 1.0;
    regret_sum += regret;
    if (regret >= out.max_regret) {
      out.max_regret = regret;
      out.worst_job = job;
    }
  }
  if (out.jobs > 0) out.mean_regret = regret_sum / static_cast<double>(out.jobs);
  return out;
}

namespace {

const char* Title(const std::string& source) {
  if (source == "vtrain_ground_truth_single.csv")
    return "vTrain ground truth, one node: Megatron-DeepSpeed on 2-8 A100s, seconds per step";
  if (source == "vtrain_ground_truth_multi.csv")
    return "vTrain ground truth, 64-512 A100s: Megatron-DeepSpeed, seconds per step";
  if (source == "narayanan2021_table2_ptdp_vs_zero3.csv")
    return "Narayanan et al. 2021, Table 2: PTD-P against DeepSpeed ZeRO-3 on Selene, seconds per "
           "step (the paper's FLOPs over its TFLOP/s)";
  if (source == "qi2024_zero_bubble_table3_5.csv")
    return "Qi et al. 2024, Table 3: pipeline schedules on 8-32 A100s, seconds per step";
  if (source == "qi2024_zero_bubble_table6_zbv.csv")
    return "Qi et al. 2024, Table 6: ZB-V against 1F1B, seconds per step";
  return "llm-foundry MPT benchmarks: Composer FSDP on A100 and H100, seconds per step";
}

// The columns of `loom_fidelity --csv` for a corpus row: what ran, in loom's terms.
std::vector<std::pair<std::string, std::string>> Features(const CorpusCase& c) {
  const Strategy& s = c.step.strategy;
  const ModelSpec& m = c.step.model;
  auto n = [](int64_t v) { return std::to_string(v); };
  return {{"job", c.job},
          {"part", c.part},
          {"gpu", c.step.cluster.gpu.name},
          {"cluster", c.step.cluster.name},
          {"framework", RegimeFramework(c.step.framework)},
          {"gpus", n(s.WorldSize())},
          {"tp", n(s.tp)},
          {"pp", n(s.pp)},
          {"dp", n(s.dp)},
          {"vpp", n(s.vpp)},
          {"micro_batch", n(s.micro_batch)},
          {"global_batch", n(s.global_batch)},
          {"seq", n(s.seq_len)},
          {"schedule", std::string(kScheduleNames.Name(s.schedule))},
          {"recompute", std::string(kRecomputeNames.Name(s.recompute))},
          {"zero_stage", n(s.zero_stage)},
          {"dtype", std::string(kDtypeNames.Name(s.dtype))},
          {"layers", n(m.num_layers)},
          {"hidden", n(m.hidden_size)},
          {"tokens_per_gpu", n(s.global_batch * s.seq_len / std::max<int64_t>(1, s.WorldSize()))}};
}

std::string TableName(const std::string& source) {
  return "steptime_" + source.substr(0, source.size() - 4);  // without ".csv"
}

}  // namespace

std::vector<FidelityTable> PredictCorpus(const Corpus& corpus) {
  std::vector<FidelityTable> tables;
  for (const char* source : kCorpusSources) {
    FidelityTable table;
    std::vector<std::string> jobs;  // per row, for the ordering
    table.name = TableName(source);
    table.title = Title(source);
    table.unit = "s";
    table.source_file = std::string("steptime/") + source;
    for (const CorpusCase& c : corpus.cases) {
      if (c.source != source) continue;
      Result<SimulationResult> r = SimulateCase(c.step);
      FidelityRow row{c.step.name, 0, c.step.measured, ""};
      row.features = Features(c);
      row.part = c.part;
      if (r.ok()) {
        row.predicted = r->step_time_s;
        row.loso_predicted = r->step_time_s;
      } else {
        row.error = r.status().message();
      }
      table.rows.push_back(std::move(row));
      jobs.push_back(c.job);
    }
    for (const RefusedRow& refused : corpus.refused) {
      if (refused.source != source) continue;
      table.rows.push_back({refused.row, 0, 0, "not expressed: " + refused.reason});
      jobs.push_back("");
    }
    table.has_ordering = true;
    table.ordering = OrderingOf(table, jobs);
    tables.push_back(std::move(table));
  }
  return tables;
}

}  // namespace loom
