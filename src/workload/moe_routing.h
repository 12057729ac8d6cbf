#ifndef LOOM_WORKLOAD_MOE_ROUTING_H_
#define LOOM_WORKLOAD_MOE_ROUTING_H_

// How many token rows the experts of one rank process under a skewed router and an expert
// capacity: the rows of the expert GEMMs and of the all-to-all on the rank that sets the time.

#include <cstdint>
#include <vector>

namespace loom {

// The routing of one MoE layer, seen from one rank of Megatron-core's expert grid
// (megatron/core/parallel_state.py, expert RankGenerator: etp fastest, then ep, then expert dp).
struct MoeRouting {
  int64_t experts = 1;        // routed experts E
  int64_t top_k = 1;          // experts per token
  int64_t local_experts = 1;  // experts on one rank: E / ep
  int64_t ep = 1;             // expert-parallel ranks the all-to-all spans
  int64_t etp = 1;            // expert tensor-parallel ranks that all-gather the routed tokens
  int64_t routed_rows = 0;    // rows one rank routes: its (sequence-parallel) tokens * top_k
  // 0: dropless. Else each expert takes at most ceil(capacity_factor * routed_rows / E) rows from
  // each routing rank and drops the rest (Megatron-core computes the capacity from the local
  // tokens: megatron/core/transformer/moe/moe_utils.py, get_capacity called by
  // topk_softmax_with_capacity; Fedus et al. 2022, "Switch Transformers", Section 2.2).
  double capacity_factor = 0;
  // Rows of the busiest expert over the mean (>= 1).
  double imbalance = 1.0;
};

// Local experts that process the same number of rows: one batched GEMM of a grouped GEMM.
struct ExpertRowGroup {
  int64_t experts = 0;
  int64_t rows = 0;
};

// The rows the experts of the busiest rank process.
struct ExpertLoad {
  std::vector<ExpertRowGroup> groups;  // by rows, largest first; experts sum to local_experts
  int64_t rows = 0;                    // their total: after the etp all-gather
  int64_t received_rows = 0;           // rows the all-to-all delivers to the rank: rows / etp
  int64_t sent_rows = 0;               // rows the rank sends: routed_rows less those it drops
};

// The load model, one routing rank's rows per expert (mean m = routed_rows / E):
// - the busiest expert gets min(imbalance' * m, capacity), where imbalance' is |imbalance| capped
//   at E / top_k (an expert sees each token at most once, so it takes at most all of them);
// - the other E - 1 experts share the rest evenly, (E - imbalance') / (E - 1) * m each, capped at
//   the capacity too. The total stays routed_rows before drops.
// Every routing rank skews the same way (the router's preference is global), so the rank holding
// the busiest expert receives ep * etp routing ranks' rows of it, and sets the time; its other
// local experts hold the others' share. Capacity is a cap, not padding: Megatron-LM's
// --moe-pad-expert-input-to-capacity is not modelled. Rows round to the nearest whole row; the
// others' rows spread evenly, the first few one row more. With imbalance 1 and no drops this is
// an even spread of etp * routed_rows rows over the local experts.
// REQUIRES: every count >= 1 except routed_rows >= 0; local_experts * ep == experts; imbalance >=
// 1; capacity_factor >= 0.
ExpertLoad BusiestRankLoad(const MoeRouting& routing);

// Expected fraction of the routed (token, expert) rows that the capacity drops under the load
// model of BusiestRankLoad: (max(0, b - c) + (E - 1) * max(0, o - c)) / (E * m), with b and o the
// busiest and the other experts' rows per routing rank and c the capacity. 0 when dropless.
// REQUIRES: as BusiestRankLoad.
double DroppedTokenFraction(const MoeRouting& routing);

}  // namespace loom

#endif  // LOOM_WORKLOAD_MOE_ROUTING_H_
