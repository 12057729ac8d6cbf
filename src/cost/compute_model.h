#ifndef LOOM_COST_COMPUTE_MODEL_H_
#define LOOM_COST_COMPUTE_MODEL_H_

#include "core/sim_time.h"
#include "spec/cluster.h"
#include "workload/ops.h"

namespace loom {

// Time of one compute kernel on one GPU.
class ComputeModel {
 public:
  virtual ~ComputeModel() = default;

  virtual SimTime Gemm(const GemmShape& gemm) const = 0;
  virtual SimTime Attention(const AttentionShape& attention) const = 0;
  virtual SimTime MemoryBound(const MemoryShape& memory) const = 0;
};

// A roofline of the GPU file's datasheet numbers and fitted calibration (GpuSpec::calibration):
// - GEMM: tile quantisation (M, N rounded up to the calibrated tile) and wave quantisation (tiles
//   run in waves over the SMs, a last partial wave costing a full one) — NVIDIA Deep Learning
//   Performance Guide, "Matrix Multiplication Background" — at the fitted asymptotic efficiency of
//   the dtype, with a memory-bound floor (operands and result over HBM bandwidth).
// - Fused attention: its executed FLOPs (causal masking halves them; the backward recomputes the
//   scores) at the fitted attention efficiency, with the same memory floor.
// - Memory-bound kernels: bytes over the achieved fraction of HBM bandwidth.
// Every kernel also pays the fitted per-kernel overhead. A value the calibration lacks falls back
// to the datasheet: efficiency 1, full bandwidth, no overhead.
class RooflineComputeModel : public ComputeModel {
 public:
  // REQUIRES: |gpu| has a peak for every dtype it will be asked to time.
  explicit RooflineComputeModel(const GpuSpec& gpu);

  SimTime Gemm(const GemmShape& gemm) const override;
  SimTime Attention(const AttentionShape& attention) const override;
  SimTime MemoryBound(const MemoryShape& memory) const override;

 private:
  double PeakFlopsPerS(Dtype dtype) const;
  double HbmBytesPerS() const;

  GpuSpec gpu_;
};

}  // namespace loom

#endif  // LOOM_COST_COMPUTE_MODEL_H_
