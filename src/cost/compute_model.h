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

// A roofline built from the GPU file alone: a kernel takes the longer of its FLOPs at a fixed
// fraction of the datasheet peak and its bytes at the datasheet HBM bandwidth. GEMMs also pay
// wave quantization: output tiles are spread over the SMs in waves, and a last partial wave
// costs a full one (NVIDIA Deep Learning Performance Guide, "Matrix Multiplication Background",
// wave quantization). The calibrated model, fitted to measured kernels, replaces these constants.
class RooflineComputeModel : public ComputeModel {
 public:
  // REQUIRES: |gpu| has a peak for every dtype it will be asked to time.
  explicit RooflineComputeModel(const GpuSpec& gpu);

  SimTime Gemm(const GemmShape& gemm) const override;
  SimTime Attention(const AttentionShape& attention) const override;
  SimTime MemoryBound(const MemoryShape& memory) const override;

  // Fraction of the dense peak that large cuBLASLt GEMMs reach in |dtype|.
  static double GemmEfficiency(Dtype dtype);

 private:
  double PeakFlopsPerS(Dtype dtype) const;

  GpuSpec gpu_;
};

}  // namespace loom

#endif  // LOOM_COST_COMPUTE_MODEL_H_
