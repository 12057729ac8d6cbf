#include "program/step_graph.h"

namespace loom {
namespace {

constexpr std::string_view kModelStatesPool = "model states";  // plan files before the split

}  // namespace

void NameStepParts(StepGraph& step) {
  TaskGraph& g = step.graph;
  for (PoolId p = 0; p < g.num_pools(); ++p) {
    const std::string_view name = g.Name(g.pool_name(p));
    if (name == kWeightsPool) step.weights = p;
    if (name == kGradientsPool) step.gradients = p;
    if (name == kOptimizerStatesPool) step.optimizer_states = p;
    if (name == kModelStatesPool) step.model_states = p;
    if (name == kActivationsPool) step.activations = p;
    if (name == kLogitsPool) step.logits = p;
    if (name == kRecomputePool) step.recompute = p;
    if (name == kGatheredWeightsPool) step.gathered_weights = p;
  }
  step.compute_category = g.Intern("compute");
  step.tp_category = g.Intern("tp");
  step.tp_hidden_category = g.Intern("tp overlapped");
  step.pp_category = g.Intern("pp");
  step.dp_category = g.Intern("dp");
  step.optimizer_category = g.Intern("optimizer");
  step.cp_category = g.Intern("cp");
  step.offload_category = g.Intern("offload");
  step.host_category = g.Intern("host");
}

}  // namespace loom
