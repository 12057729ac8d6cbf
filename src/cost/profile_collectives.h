#ifndef LOOM_COST_PROFILE_COLLECTIVES_H_
#define LOOM_COST_PROFILE_COLLECTIVES_H_

#include <vector>

#include "cost/nccl_tests_parser.h"
#include "cost/profile.h"

namespace loom {

// The collectives of |profile| as nccl-tests runs, so that `loom fit --cluster` fits a probe's
// measurements exactly as it fits nccl-tests output: one run per collective and group, in the
// order they first appear, rows in the profile's order. Broadcast has no nccl-tests run loom
// fits and is left out. Each run's file is "<profile file> (<group>)", each row's where
// "<profile file>: collectives[i]"; ranks, nodes and GPU name come from the samples and device.
std::vector<NcclTestsRun> NcclTestsRunsOf(const Profile& profile);

}  // namespace loom

#endif  // LOOM_COST_PROFILE_COLLECTIVES_H_
