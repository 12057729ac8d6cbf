// Pass costs with the framework's asynchronous backward collectives (LayerOpsOptions::
// tp_backward_overlap): Megatron-LM's column-parallel linears issue the input re-gather before the
// input gradient's GEMM and the input gradient's reduction before the weight gradient's GEMM,
// and each hides behind its GEMM as far as that GEMM lasts.

#include "sim/pass_costs.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "cost/nccl_model.h"
#include "sim/sim_test_support.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

// GPT-3 175B's layer shape on one DGX A100 node: tp 8, micro-batch 1, seq 2048.
Strategy TensorParallel(bool sp) {
  Strategy s;
  s.tp = 8;
  s.sp = sp;
  s.micro_batch = 1;
  s.global_batch = 1;
  s.seq_len = 2048;
  s.dtype = Dtype::kFp16;
  return s;
}

struct Costed {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 1);
  RooflineComputeModel compute{in.cluster.gpu};
  NcclCommModel comm{in.cluster};

  SimTime Time(const Op& op, const Strategy& s) const {
    return OpTime(op, compute, comm, PlaceStrategy(s, in.cluster));
  }
  // The sum over the layer's backward collectives of min(collective, its partner GEMM), by where
  // the partner runs: B (re-gather beside the input gradient) or W (reduction beside the weight
  // gradient).
  std::pair<SimTime, SimTime> ExpectedHidden(const LayerOps& ops, const Strategy& s) const {
    SimTime in_b, in_w;
    for (const Op& op : ops.backward_input) {
      for (const OpName partner : TpBackwardPartners(op.name)) {
        const auto named = [partner](const Op& o) { return o.name == partner; };
        auto b = std::find_if(ops.backward_input.begin(), ops.backward_input.end(), named);
        auto w = std::find_if(ops.backward_weight.begin(), ops.backward_weight.end(), named);
        if (b != ops.backward_input.end()) in_b += Min(Time(op, s), Time(*b, s));
        if (w != ops.backward_weight.end()) in_w += Min(Time(op, s), Time(*w, s));
      }
    }
    return {in_b, in_w};
  }
};

TEST(PassCosts, ColumnLinearsHideTheirBackwardCollectivesBesideTheirOwnGemms) {
  const Costed c;
  for (const bool sp : {false, true}) {
    const Strategy s = TensorParallel(sp);
    LayerOpsOptions overlap;
    overlap.tp_backward_overlap = true;
    Result<LayerOps> ops = BuildTransformerLayerOps(c.in.model, s, overlap);
    ASSERT_TRUE(ops.ok()) << ops.status().message();
    const auto [in_b, in_w] = c.ExpectedHidden(*ops, s);
    // The reductions of QKV's and MLP-up's input gradients always; the re-gathers only with sp.
    EXPECT_GT(in_w, SimTime()) << sp;
    EXPECT_EQ(in_b > SimTime(), sp);
    const Placements placements = PlaceStrategy(s, c.in.cluster);
    const BlockPasses on = CostBlockPasses(*ops, s, c.compute, c.comm, placements, overlap);
    const BlockPasses off = CostBlockPasses(*ops, s, c.compute, c.comm, placements, {});
    EXPECT_EQ(on.backward.tp_hidden, in_b + in_w) << sp;
    EXPECT_EQ(off.backward.tp_hidden, SimTime()) << sp;
    EXPECT_EQ(on.backward.time, off.backward.time) << sp;  // hidden, not removed
    EXPECT_EQ(on.forward.tp_hidden, SimTime()) << sp;      // the forward's collectives block
    // Each pair hides at most its collective. Without sp the backward's only collectives are
    // the two reductions, which the weight gradients' GEMMs outlast; with sp the row-parallel
    // linears' gradient all-gathers block.
    if (sp) {
      EXPECT_LT(on.backward.tp_hidden, on.backward.tp_comm);
    } else {
      EXPECT_EQ(on.backward.tp_hidden, on.backward.tp_comm);
    }
  }
}

// Apart (zero-bubble schedules), B's reductions have no weight-gradient GEMM beside them: only a
// BW pass hides them.
TEST(PassCosts, TheReductionHidesOnlyWhereBAndWRunAsOnePass) {
  const Costed c;
  const Strategy s = TensorParallel(true);
  LayerOpsOptions overlap;
  overlap.tp_backward_overlap = true;
  Result<LayerOps> layer = BuildTransformerLayerOps(c.in.model, s, overlap);
  ASSERT_TRUE(layer.ok()) << layer.status().message();
  const auto [in_b, in_w] = c.ExpectedHidden(*layer, s);
  Strategy chunked = s;
  chunked.global_batch = 1;
  Result<std::vector<ChunkCost>> chunks = CostChunks(c.in.model, chunked, c.compute, c.comm,
                                                     PlaceStrategy(chunked, c.in.cluster), overlap);
  ASSERT_TRUE(chunks.ok()) << chunks.status().message();
  ASSERT_EQ(chunks->size(), 1u);
  const ChunkCost& chunk = chunks->front();
  const int64_t layers = c.in.model.num_layers;
  // Every layer's pairs, and the output head's (a column-parallel linear too).
  EXPECT_GE(chunk.joint_tp_hidden, in_w * layers);
  EXPECT_GE(chunk.backward_input.tp_hidden, in_b * layers);
  EXPECT_EQ(chunk.backward_weight.tp_hidden, SimTime());
  EXPECT_EQ(BackwardPass(chunk).tp_hidden, chunk.backward_input.tp_hidden + chunk.joint_tp_hidden);
  EXPECT_EQ(BackwardPass(chunk).time, chunk.backward_input.time + chunk.backward_weight.time);
}

// --tp-comm-overlap's userbuffers replace the framework's NCCL path: the pass hides what they
// hide, whatever the framework does.
TEST(PassCosts, TpCommOverlapReplacesTheAsynchronousBackward) {
  const Costed c;
  Strategy s = TensorParallel(true);
  s.tp_comm_overlap = true;
  LayerOpsOptions overlap;
  overlap.tp_backward_overlap = true;
  Result<LayerOps> ops = BuildTransformerLayerOps(c.in.model, s, overlap);
  ASSERT_TRUE(ops.ok()) << ops.status().message();
  const Placements placements = PlaceStrategy(s, c.in.cluster);
  const BlockPasses on = CostBlockPasses(*ops, s, c.compute, c.comm, placements, overlap);
  const BlockPasses off = CostBlockPasses(*ops, s, c.compute, c.comm, placements, {});
  EXPECT_EQ(on.backward.tp_hidden, off.backward.tp_hidden);
  EXPECT_GT(on.backward.tp_hidden, SimTime());
}

// The engine slows the kernels beside the hidden collectives to 1 - share of their rate.
TEST(PassCosts, APassSpanCountsTheSmsItsHiddenCollectivesHold) {
  PassCost pass;
  pass.time = SimTime::FromNanos(10'000);
  pass.tp_comm = SimTime::FromNanos(3'000);
  pass.tp_hidden = SimTime::FromNanos(2'000);
  EXPECT_EQ(PassSpan(pass, 0.0), SimTime::FromNanos(8'000));
  EXPECT_EQ(PassSpan(pass, 0.25), SimTime::FromNanos(8'500));
  pass.tp_hidden = SimTime();
  EXPECT_EQ(PassSpan(pass, 0.25), pass.time);
}

}  // namespace
}  // namespace loom
