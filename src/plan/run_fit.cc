#include "plan/run_fit.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/json_reader.h"
#include "cost/training_log.h"
#include "spec/hub_cache.h"
#include "spec/scenario.h"

namespace loom {
namespace {

// Huber's knee on log(predicted / measured): errors beyond 5 % count linearly, so one odd run
// does not pull the fit.
constexpr double kHuberKnee = 0.05;
// A parameter no run moves by 0.2 % when it changes by 10 % cannot be fitted.
constexpr double kMinSensitivity = 0.02;
// Two parameters whose sensitivities point the same way (cosine above this) cannot be told apart.
constexpr double kMaxCosine = 0.995;
// The multipliers stay within [1/20, 20].
constexpr double kMaxLogMultiplier = 3.0;

double Clamp01(double v) { return std::min(1.0, v); }

// One run object (from JSON, or a CSV row turned into one), read with |r|.
struct RunSource {
  std::string name;
  std::string model_path;
  std::optional<int64_t> nodes;
  Strategy strategy;
  std::string
      log_path;  // a training log the step time (and without "strategy", the strategy) comes from
  std::string attention = "fused";
  bool dropout = false;
  std::optional<std::string> framework;
  double step_time_s = 0;
};

// The strategy a Megatron-LM argument dump describes (megatron/training/arguments.py names);
// arguments it does not have keep |s|'s values. Errors name the argument.
Status StrategyFromMegatronArguments(const std::map<std::string, std::string>& args,
                                     const std::string& where, Strategy* s) {
  const auto text = [&](const char* name) -> std::optional<std::string> {
    auto it = args.find(name);
    return it == args.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  Status status = Status::Ok();
  const auto integer = [&](const char* name, int64_t* into) {
    std::optional<std::string> v = text(name);
    if (!v || *v == "None") return;
    // from_chars reports a value beyond 64 bits; strtoll would clamp it to INT64_MAX.
    int64_t n = 0;
    const auto [end, error] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (error != std::errc() || end != v->data() + v->size() || n < 1) {
      if (status.ok()) {
        status = Status::InvalidArgument(where + ": argument " + name + " is '" + Abbreviated(*v) +
                                         "', not a positive integer that fits in 64 bits");
      }
      return;
    }
    *into = n;
  };
  const auto flag = [&](const char* name) {
    return text(name) == std::optional<std::string>("True");
  };
  integer("tensor_model_parallel_size", &s->tp);
  integer("pipeline_model_parallel_size", &s->pp);
  integer("data_parallel_size", &s->dp);
  integer("context_parallel_size", &s->cp);
  integer("expert_model_parallel_size", &s->ep);
  integer("micro_batch_size", &s->micro_batch);
  integer("global_batch_size", &s->global_batch);
  integer("seq_length", &s->seq_len);
  if (text("sequence_parallel")) s->sp = flag("sequence_parallel");
  int64_t layers = 0, per_chunk = 0;
  integer("num_layers", &layers);
  integer("num_layers_per_virtual_pipeline_stage", &per_chunk);
  if (layers > 0 && per_chunk > 0 && layers % (s->pp * per_chunk) == 0) {
    s->vpp = layers / (s->pp * per_chunk);
    if (s->vpp > 1) s->schedule = ScheduleKind::kInterleaved;
  }
  if (std::optional<std::string> g = text("recompute_granularity")) {
    s->recompute = *g == "full"        ? Recompute::kFull
                   : *g == "selective" ? Recompute::kSelective
                                       : Recompute::kNone;
  }
  if (flag("bf16")) s->dtype = Dtype::kBf16;
  if (flag("fp16")) s->dtype = Dtype::kFp16;
  if (flag("use_distributed_optimizer")) s->zero_stage = 1;
  if (text("overlap_grad_reduce")) s->overlap_grad_reduce = flag("overlap_grad_reduce");
  if (text("overlap_param_gather")) s->overlap_param_gather = flag("overlap_param_gather");
  if (text("tp_comm_overlap")) s->tp_comm_overlap = flag("tp_comm_overlap");
  if (text("gradient_accumulation_fusion") == std::optional<std::string>("False")) {
    s->grad_accumulation = GradAccumulation::kAdd;
  }
  return status;
}

RunSource ReadRun(JsonReader& r, const std::string& file, const std::string& default_name) {
  RunSource run;
  run.name = r.OptionalString("name").value_or(default_name);
  run.model_path = ModelPathBeside(file, r.String("model"));
  run.nodes = r.OptionalInt("nodes");
  if (std::optional<std::string> log = r.OptionalString("log"))
    run.log_path = PathBeside(file, *log);
  if (r.Has("strategy")) ReadStrategyObject(r.Object("strategy"), &run.strategy);
  run.attention = r.OptionalOneOf("attention", {"fused", "unfused"}).value_or("fused");
  run.dropout = r.OptionalBool("dropout").value_or(false);
  if (std::optional<std::string> f = r.OptionalString("framework")) {
    run.framework = IsFrameworkPath(*f) ? PathBeside(file, *f) : *f;
  }
  if (run.log_path.empty() || r.Has("step_time_s"))
    run.step_time_s = r.PositiveNumber("step_time_s");
  if (!run.log_path.empty() && r.Has("step_time_s")) {
    r.AddError("step_time_s", "and \"log\" both give the step time; keep one");
  }
  return run;
}

// A CSV cell as JSON: an integer, a number, true/false, or text.
nlohmann::json Cell(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    // Digits beyond int64 fall through to a double, which the range checks then judge.
    int64_t whole = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), whole);
    if (error == std::errc() && end == text.data() + text.size()) return whole;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size()) return v;
  return text;
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) {
    const size_t a = cell.find_first_not_of(" \t\r"), b = cell.find_last_not_of(" \t\r");
    cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  if (!line.empty() && line.back() == ',') cells.push_back("");
  return cells;
}

// The runs of a CSV file as JSON run objects; the keys that are not a run's own go to "strategy".
Result<std::vector<nlohmann::json>> CsvRuns(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, "check the path of the runs file"));
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::vector<nlohmann::json> runs;
  int row = 0;
  while (std::getline(in, line)) {
    ++row;
    if (line.find_first_not_of(" \t\r") == std::string::npos ||
        line[line.find_first_not_of(" \t")] == '#')
      continue;
    if (line.find('"') != std::string::npos) {
      return Status::InvalidArgument(
          path + ": line " + std::to_string(row) +
          ": quoted CSV cells are not read; write plain comma-separated values");
    }
    std::vector<std::string> cells = SplitCsv(line);
    if (header.empty()) {
      header = cells;
      for (size_t i = 0; i < header.size(); ++i) {
        if (std::find(header.begin(), header.begin() + static_cast<std::ptrdiff_t>(i), header[i]) !=
            header.begin() + static_cast<std::ptrdiff_t>(i)) {
          return Status::InvalidArgument(
              path + ": line " + std::to_string(row) + ": column \"" + Abbreviated(header[i]) +
              "\" appears twice in the header; keep only the one you mean");
        }
      }
      continue;
    }
    if (cells.size() != header.size()) {
      return Status::InvalidArgument(path + ": line " + std::to_string(row) + " has " +
                                     std::to_string(cells.size()) + " cells, the header " +
                                     std::to_string(header.size()));
    }
    nlohmann::json run = nlohmann::json::object(), strategy = nlohmann::json::object();
    for (size_t i = 0; i < header.size(); ++i) {
      if (cells[i].empty()) continue;
      const std::string& key = header[i];
      const bool own = key == "name" || key == "model" || key == "nodes" || key == "attention" ||
                       key == "dropout" || key == "framework" || key == "step_time_s" ||
                       key == "log";
      const bool text = key == "name" || key == "model" || key == "framework" || key == "log";
      (own ? run : strategy)[key] = text ? nlohmann::json(cells[i]) : Cell(cells[i]);
    }
    if (!strategy.empty()) run["strategy"] = strategy;
    if (!run.contains("name")) run["name"] = path + ":" + std::to_string(row);
    runs.push_back(std::move(run));
  }
  if (runs.empty())
    return Status::InvalidArgument(path + ": no runs (a header line, then one run per line)");
  return runs;
}

double Predict(const MeasuredRun& run, Status* status) {
  Result<SimulationResult> r =
      SimulateTrainingStep(run.model, run.cluster, run.strategy, run.options);
  if (!r.ok()) {
    if (status->ok())
      *status =
          Status::InvalidArgument("run '" + run.name + "': " + std::string(r.status().message()));
    return 1.0;
  }
  return r->step_time_s;
}

// log(predicted / measured) of every run under log multipliers |x|.
std::vector<double> Residuals(const std::vector<const MeasuredRun*>& runs,
                              const std::vector<RunParam>& params, const std::vector<double>& x,
                              Status* status) {
  std::vector<double> values;
  for (double v : x) values.push_back(std::exp(v));
  std::vector<double> r;
  for (const MeasuredRun* run : runs) {
    r.push_back(
        std::log(Predict(WithMultipliers(*run, params, values), status) / run->step_time_s));
  }
  return r;
}

// d log(step time) / d log(parameter) at |x|, by central differences of 10 %.
std::vector<std::vector<double>> Sensitivity(const std::vector<const MeasuredRun*>& runs,
                                             const std::vector<RunParam>& params,
                                             const std::vector<double>& x, Status* status) {
  const double h = std::log(1.1);
  std::vector<std::vector<double>> s(runs.size(), std::vector<double>(params.size()));
  for (size_t j = 0; j < params.size(); ++j) {
    std::vector<double> up = x, down = x;
    up[j] += h;
    down[j] -= h;
    const std::vector<double> a = Residuals(runs, params, up, status),
                              b = Residuals(runs, params, down, status);
    for (size_t i = 0; i < runs.size(); ++i) s[i][j] = (a[i] - b[i]) / (2 * h);
  }
  return s;
}

// Why |params| cannot be fitted on runs of sensitivity |s|, or "" when they can.
std::string Unidentifiable(const std::vector<std::vector<double>>& s,
                           const std::vector<RunParam>& params) {
  const auto name = [&](size_t j) { return std::string(kRunParamNames.Name(params[j])); };
  const auto help = [&](size_t j) {
    switch (params[j]) {
      case RunParam::kHost:
        return std::string(
            "runs whose GPU waits for the host: small models or micro-batch 1 under an eager "
            "framework (not --framework none)");
      case RunParam::kCompute:
        return std::string("runs bound by their GPUs' kernels: large micro-batches on few GPUs");
      case RunParam::kInterNode:
        return std::string("runs whose data-parallel or pipeline traffic crosses nodes");
    }
    return std::string();
  };
  for (size_t j = 0; j < params.size(); ++j) {
    double largest = 0;
    for (const auto& row : s) largest = std::max(largest, std::abs(row[j]));
    if (largest < kMinSensitivity) {
      char text[64];
      std::snprintf(text, sizeof text, "%.2f%%", 10 * largest);
      return name(j) +
             ": no run depends on it (changing it by 10% moves no predicted step time by more "
             "than " +
             text + "); add " + help(j) + ", or leave it out of --params";
    }
  }
  for (size_t j = 0; j < params.size(); ++j) {
    for (size_t k = j + 1; k < params.size(); ++k) {
      double dot = 0, nj = 0, nk = 0;
      for (const auto& row : s) {
        dot += row[j] * row[k];
        nj += row[j] * row[j];
        nk += row[k] * row[k];
      }
      if (std::abs(dot) > kMaxCosine * std::sqrt(nj * nk)) {
        return name(j) + " and " + name(k) +
               " move every run alike, so the runs cannot tell them apart; add " + help(j) +
               " and " + help(k) + ", or fit one of them (--params)";
      }
    }
  }
  return "";
}

// Solves the p x p system |a| x = |b| (p <= 3) by Gaussian elimination with partial pivoting.
std::vector<double> Solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    if (std::abs(a[c][c]) < 1e-12) return std::vector<double>(n, 0.0);
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (size_t c = n; c-- > 0;) {
    double v = b[c];
    for (size_t k = c + 1; k < n; ++k) v -= a[c][k] * x[k];
    x[c] = v / a[c][c];
  }
  return x;
}

double HuberLoss(const std::vector<double>& r) {
  double loss = 0;
  for (double v : r) {
    const double a = std::abs(v);
    loss += a <= kHuberKnee ? 0.5 * a * a : kHuberKnee * (a - 0.5 * kHuberKnee);
  }
  return loss;
}

// Levenberg-Marquardt on Huber-weighted residuals (iteratively reweighted), from |x|.
std::vector<double> Minimise(const std::vector<const MeasuredRun*>& runs,
                             const std::vector<RunParam>& params, std::vector<double> x,
                             Status* status) {
  const size_t p = params.size();
  double lambda = 1e-3;
  std::vector<double> r = Residuals(runs, params, x, status);
  double loss = HuberLoss(r);
  for (int iteration = 0; iteration < 40 && status->ok(); ++iteration) {
    const std::vector<std::vector<double>> jac = Sensitivity(runs, params, x, status);
    std::vector<std::vector<double>> a(p, std::vector<double>(p, 0.0));
    std::vector<double> g(p, 0.0);
    for (size_t i = 0; i < runs.size(); ++i) {
      const double w = std::abs(r[i]) <= kHuberKnee ? 1.0 : kHuberKnee / std::abs(r[i]);
      for (size_t j = 0; j < p; ++j) {
        g[j] -= w * jac[i][j] * r[i];
        for (size_t k = 0; k < p; ++k) a[j][k] += w * jac[i][j] * jac[i][k];
      }
    }
    bool improved = false;
    for (int tries = 0; tries < 8 && !improved; ++tries) {
      std::vector<std::vector<double>> damped = a;
      for (size_t j = 0; j < p; ++j) damped[j][j] += lambda * std::max(a[j][j], 1e-9);
      const std::vector<double> step = Solve(damped, g);
      std::vector<double> next = x;
      for (size_t j = 0; j < p; ++j)
        next[j] = std::clamp(x[j] + step[j], -kMaxLogMultiplier, kMaxLogMultiplier);
      const std::vector<double> next_r = Residuals(runs, params, next, status);
      const double next_loss = HuberLoss(next_r);
      if (next_loss < loss) {
        double moved = 0;
        for (size_t j = 0; j < p; ++j) moved = std::max(moved, std::abs(next[j] - x[j]));
        x = next;
        r = next_r;
        lambda = std::max(1e-6, lambda / 10);
        improved = true;
        if (loss - next_loss < 1e-12 || moved < 1e-5) return x;
        loss = next_loss;
      } else {
        lambda *= 10;
      }
    }
    if (!improved) break;
  }
  return x;
}

double Mape(const std::vector<RunFitRow>& rows, double RunFitRow::*field) {
  double sum = 0;
  for (const RunFitRow& row : rows) sum += std::abs(row.*field / row.measured_s - 1);
  return rows.empty() ? 0 : 100 * sum / static_cast<double>(rows.size());
}

}  // namespace

MeasuredRun WithMultipliers(const MeasuredRun& run, const std::vector<RunParam>& params,
                            const std::vector<double>& values) {
  MeasuredRun out = run;
  for (size_t j = 0; j < params.size(); ++j) {
    const double v = values[j];
    switch (params[j]) {
      case RunParam::kHost:
        if (out.options.framework) out.options.framework->scale *= v;
        break;
      case RunParam::kCompute: {
        ComputeCalibration& c = out.cluster.gpu.calibration;
        for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kTf32, Dtype::kFp32}) {
          if (std::optional<double>& slot = c.GemmEfficiencySlot(d)) *slot = Clamp01(*slot * v);
          // The sustained ceiling scales with the rates it bounds.
          if (std::optional<double>& slot = c.SustainedTensorFractionSlot(d))
            *slot = Clamp01(*slot * v);
        }
        c.attention_efficiency = Clamp01(c.attention_efficiency.value_or(1.0) * v);
        c.memory_bandwidth_fraction = Clamp01(c.memory_bandwidth_fraction.value_or(1.0) * v);
        if (std::optional<double>& rows = c.memory_bandwidth_fraction_row_reduction)
          *rows = Clamp01(*rows * v);
        if (std::optional<double>& gemm = c.gemm_memory_bandwidth_fraction)
          *gemm = Clamp01(*gemm * v);
        break;
      }
      case RunParam::kInterNode:
        out.cluster.calibration.inter_node_busbw_fraction =
            Clamp01(out.cluster.calibration.inter_node_busbw_fraction.value_or(1.0) * v);
        break;
    }
  }
  return out;
}

Result<std::vector<MeasuredRun>> LoadRuns(const std::string& path, const std::string& cluster_file,
                                          const std::string& default_framework) {
  std::vector<nlohmann::json> objects;
  nlohmann::json document;
  const bool csv = path.ends_with(".csv");
  if (csv) {
    LOOM_ASSIGN_OR_RETURN(objects, CsvRuns(path));
  } else {
    LOOM_ASSIGN_OR_RETURN(document, ReadJsonObjectFile(path));
    JsonReader top(document, path);
    const std::string schema = top.String("schema");
    if (!schema.empty() && schema != "loom.runs/1") {
      top.AddError("schema", "is \"" + schema + "\"; this loom reads \"loom.runs/1\"");
    }
    top.Allow("runs");
    top.OptionalString("source");  // where the runs come from, for people
    if (!document.contains("runs") || !document["runs"].is_array() || document["runs"].empty()) {
      top.AddError("runs",
                   "must be a non-empty array of runs, each {\"model\", \"strategy\", "
                   "\"step_time_s\", ...}");
    }
    LOOM_RETURN_IF_ERROR(top.Finish(UnknownKeys::kError));
    for (const nlohmann::json& run : document["runs"]) objects.push_back(run);
  }
  LOOM_ASSIGN_OR_RETURN(ClusterSpec base, LoadClusterSpec(cluster_file));
  std::map<std::string, ModelSpec> models;
  std::map<std::string, std::optional<FrameworkProfile>> frameworks;
  std::vector<MeasuredRun> runs;
  for (size_t i = 0; i < objects.size(); ++i) {
    const std::string where =
        csv ? objects[i].value("name", std::string()) : "runs[" + std::to_string(i) + "]";
    if (!objects[i].is_object()) {
      return Status::InvalidArgument(path + ": " + where +
                                     " is not an object; give {\"model\", \"strategy\", "
                                     "\"step_time_s\"}");
    }
    JsonReader r(objects[i], path, csv ? where : "runs[" + std::to_string(i) + "]");
    const RunSource source = ReadRun(r, path, path + ":" + std::to_string(i + 1));
    LOOM_RETURN_IF_ERROR(r.Finish(UnknownKeys::kError));
    MeasuredRun run;
    run.name = source.name;
    run.strategy = source.strategy;
    run.step_time_s = source.step_time_s;
    if (!source.log_path.empty()) {
      Result<TrainingLog> log = ReadTrainingLog(source.log_path);
      if (!log.ok())
        return Status::InvalidArgument(path + ": run '" + run.name +
                                       "': " + std::string(log.status().message()));
      if (!log->arguments.empty()) {
        // The log's arguments say what ran; the run's own strategy keys, read again on top, win.
        Strategy from_log;
        LOOM_RETURN_IF_ERROR(
            StrategyFromMegatronArguments(log->arguments, source.log_path, &from_log));
        if (objects[i].contains("strategy")) {
          JsonReader again(objects[i], path);
          ReadStrategyObject(again.Object("strategy"), &from_log);
        }
        run.strategy = from_log;
      }
      Result<double> step = log->StepTimeSeconds(run.strategy.global_batch);
      if (!step.ok())
        return Status::InvalidArgument(source.log_path + ": " +
                                       std::string(step.status().message()));
      run.step_time_s = *step;
    }
    if (!models.contains(source.model_path)) {
      Result<ModelSpec> model = LoadModelSpec(source.model_path);
      if (!model.ok())
        return Status::InvalidArgument(path + ": run '" + run.name +
                                       "': " + std::string(model.status().message()));
      models.emplace(source.model_path, *model);
    }
    run.model = models.at(source.model_path);
    run.cluster = base;
    const int64_t world = run.strategy.WorldSize();
    run.cluster.nodes =
        source.nodes.value_or((world + base.gpus_per_node - 1) / base.gpus_per_node);
    const std::string framework = source.framework.value_or(default_framework);
    if (!frameworks.contains(framework)) {
      Result<std::optional<FrameworkProfile>> f = ResolveFramework(framework, cluster_file);
      if (!f.ok())
        return Status::InvalidArgument(path + ": run '" + run.name +
                                       "': " + std::string(f.status().message()));
      frameworks.emplace(framework, *f);
    }
    run.options.framework = frameworks.at(framework);
    run.options.kernels.attention =
        source.attention == "unfused" ? AttentionKernel::kUnfused : AttentionKernel::kFused;
    run.options.kernels.dropout = source.dropout;
    runs.push_back(std::move(run));
  }
  return runs;
}

Result<std::vector<RunParam>> IdentifiableParams(const std::vector<MeasuredRun>& runs,
                                                 const std::vector<RunParam>& candidates,
                                                 std::vector<std::string>* dropped) {
  std::vector<const MeasuredRun*> all;
  for (const MeasuredRun& run : runs) all.push_back(&run);
  Status status = Status::Ok();
  const std::vector<std::vector<double>> s =
      Sensitivity(all, candidates, std::vector<double>(candidates.size(), 0.0), &status);
  LOOM_RETURN_IF_ERROR(status);
  std::vector<RunParam> kept;
  for (size_t j = 0; j < candidates.size(); ++j) {
    std::vector<std::vector<double>> column;
    for (const auto& row : s) column.push_back({row[j]});
    const std::string why = Unidentifiable(column, {candidates[j]});
    if (why.empty()) {
      kept.push_back(candidates[j]);
    } else {
      dropped->push_back(why);
    }
  }
  return kept;
}

Result<RunFit> FitRuns(const std::vector<MeasuredRun>& runs, const std::vector<RunParam>& params) {
  if (params.empty())
    return Status::InvalidArgument("fit --runs: no parameter to fit; name some with --params");
  if (runs.size() < params.size() + 1) {
    return Status::InvalidArgument("fit --runs: " + std::to_string(params.size()) +
                                   " parameters need at least " +
                                   std::to_string(params.size() + 1) +
                                   " runs (one more than parameters, so each "
                                   "run can be left out); the runs file has " +
                                   std::to_string(runs.size()));
  }
  std::vector<const MeasuredRun*> all;
  for (const MeasuredRun& run : runs) all.push_back(&run);
  Status status = Status::Ok();
  const std::vector<double> origin(params.size(), 0.0);
  RunFit fit;
  fit.params = params;
  fit.sensitivity = Sensitivity(all, params, origin, &status);
  LOOM_RETURN_IF_ERROR(status);
  if (const std::string why = Unidentifiable(fit.sensitivity, params); !why.empty()) {
    return Status::InvalidArgument("fit --runs: cannot fit " + why);
  }
  const std::vector<double> x = Minimise(all, params, origin, &status);
  LOOM_RETURN_IF_ERROR(status);
  for (double v : x) fit.values.push_back(std::exp(v));
  const std::vector<double> ones(params.size(), 1.0);
  for (const MeasuredRun& run : runs) {
    RunFitRow row;
    row.name = run.name;
    row.measured_s = run.step_time_s;
    row.before_s = Predict(WithMultipliers(run, params, ones), &status);
    row.fitted_s = Predict(WithMultipliers(run, params, fit.values), &status);
    fit.rows.push_back(row);
  }
  // Leave each run out: fit on the others (when they identify every parameter), predict it.
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<const MeasuredRun*> others;
    std::vector<std::vector<double>> s;
    for (size_t k = 0; k < runs.size(); ++k) {
      if (k == i) continue;
      others.push_back(&runs[k]);
      s.push_back(fit.sensitivity[k]);
    }
    if (!Unidentifiable(s, params).empty()) continue;
    const std::vector<double> xi = Minimise(others, params, x, &status);
    std::vector<double> values;
    for (double v : xi) values.push_back(std::exp(v));
    fit.rows[i].left_out_s = Predict(WithMultipliers(runs[i], params, values), &status);
  }
  LOOM_RETURN_IF_ERROR(status);
  fit.before_mape = Mape(fit.rows, &RunFitRow::before_s);
  fit.fitted_mape = Mape(fit.rows, &RunFitRow::fitted_s);
  double sum = 0;
  int count = 0;
  for (const RunFitRow& row : fit.rows) {
    if (!row.left_out_s) continue;
    sum += std::abs(*row.left_out_s / row.measured_s - 1);
    ++count;
  }
  if (count > 0) fit.left_out_mape = 100 * sum / count;
  return fit;
}

}  // namespace loom
