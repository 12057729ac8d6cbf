#ifndef LOOM_SIM_SIMULATED_PLAN_H_
#define LOOM_SIM_SIMULATED_PLAN_H_

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "program/plan_file.h"
#include "sim/simulator.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {

// Simulates |strategy| as |options| say (one data-parallel replica unless options.full) and
// returns its plan file: each distinct rank program once, and the layout that unfolds it. |source| is stored
// as it is. Errors: those of PrepareTrainingStep and SimulatePreparedStep.
Result<PlanFile> MakePlanFile(const ModelSpec& model, const ClusterSpec& cluster,
                              const Strategy& strategy, const SimulationOptions& options,
                              nlohmann::ordered_json source);

}  // namespace loom

#endif  // LOOM_SIM_SIMULATED_PLAN_H_
