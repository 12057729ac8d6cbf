#ifndef LOOM_COST_COMPUTE_MODEL_H_
#define LOOM_COST_COMPUTE_MODEL_H_

#include "core/sim_time.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// Time of one compute kernel on one GPU.
class ComputeModel {
 public:
  virtual ~ComputeModel() = default;

  virtual SimTime Gemm(const GemmShape& gemm) const = 0;
  virtual SimTime Attention(const AttentionShape& attention) const = 0;
  virtual SimTime MemoryBound(const MemoryShape& memory) const = 0;
};

// HBM bytes Transformer Engine moves to cast the operands of |gemm| to fp8 with delayed scaling:
// per element of A (m x k) and B (k x n) of each of the batch products, read 2 bf16 bytes and write
// 1 fp8 byte (Micikevicius et al. 2022, "FP8 Formats for Deep Learning", Section 4: per-tensor
// scaling; TE's cast/cast-transpose kernels). The amax of each tensor is reduced inside the same
// kernel and the scale comes from the amax history of earlier steps (delayed scaling), so the
// tensor is read once. 0 for a GEMM not in fp8. An upper bound: TE reuses the cast of a weight
// over a step's micro-batches and emits fp8 from its fused LayerNorm, which a GemmShape does not
// record.
double GemmCastBytes(const GemmShape& gemm);

// Bytes the epilogue of a GEMM with accumulate_fp32 reads and writes per output element: one fp32
// value each way (Megatron-LM's main_grad, C = A^T B + C).
inline constexpr double kAccumulatorBytes = 4.0 + 4.0;

// The time of |gemm|'s kernel body whose main loop takes |main_loop_s|: with accumulate_fp32, its
// epilogue's fp32 traffic at |seconds_per_hbm_byte| is added (|overlap| false: the epilogue runs
// after the main loop, CUTLASS 2.x) or hidden under the main loop up to its own time (|overlap|
// true: warp-specialised kernels, CUTLASS 3); otherwise |main_loop_s|. What GemmKernel charges
// and the compute fits reproduce.
double WithAccumulatingEpilogue(const GemmShape& gemm, double main_loop_s,
                                double seconds_per_hbm_byte, bool overlap);

// A roofline of the GPU file's datasheet numbers and fitted calibration (GpuSpec::calibration):
// - GEMM: the CTA tile and split-K cuBLAS would pick for the shape (ChooseGemmTile,
//   cost/gemm_tiles.h), with its tile quantisation (M, N rounded up to the tile) and wave
//   quantisation (tiles run in waves over the SMs, a last partial wave costing a full one) — NVIDIA
//   Deep Learning Performance Guide, "Matrix Multiplication Background" — at the fitted efficiency
//   of the dtype plus the operand loads the main loop does not hide, with a memory-bound floor
//   (operands and result over HBM bandwidth).
// - GEMM accumulating into fp32 (GemmShape::accumulate_fp32, Megatron's gradient accumulation
//   fusion): the epilogue reads and writes m * n fp32 values (8 bytes) instead of writing m * n of
//   the dtype. Where the GPU's kernels run the epilogue after each tile's main loop (CUTLASS 2.x
//   multistage kernels on Ampere, media/docs/efficient_gemm.md), the extra bytes are added at the
//   achieved HBM bandwidth; where they overlap one tile's epilogue with another's main loop
//   (gemm_epilogue_overlap: CUTLASS 3 warp-specialised persistent ping-pong and cooperative kernels
//   on Hopper, efficient_gemm.md "Warp Specialization"), the kernel takes the longer of its main
//   loop and its epilogue traffic.
// - Fused attention: where the calibration has the pass's attention tiles, the tile model of
//   cost/attention_tiles.h (CTAs over SMs, products and softmax per score, diagonal blocks, waves,
//   a fixed latency that stands for the kernel overhead); otherwise its executed FLOPs (causal
//   masking halves them; the backward recomputes the scores) at the fitted attention efficiency.
//   Either with the same memory floor.
// - fp8 GEMM: the kernel above at the fp8 peak and efficiency, preceded by Transformer Engine's
//   casts of its bf16 operands to fp8 (GemmCastBytes), memory-bound at the achieved HBM bandwidth
//   (the casts add no per-kernel overhead of their own).
// - Memory-bound kernels: bytes over the achieved fraction of HBM bandwidth.
// Every kernel also pays the fitted per-kernel overhead. A value the calibration lacks falls back
// to the datasheet: efficiency 1, full bandwidth, no overhead, no operand term.
class RooflineComputeModel : public ComputeModel {
 public:
  // REQUIRES: |gpu| has a peak for every dtype it will be asked to time.
  explicit RooflineComputeModel(const GpuSpec& gpu);

  // GemmKernel, plus for an fp8 GEMM the casts of its operands: GemmCastBytes over the achieved
  // HBM bandwidth.
  SimTime Gemm(const GemmShape& gemm) const override;
  // The tensor-core kernel alone, with operands already in |gemm.dtype|: what a GEMM benchmark
  // (cuBLASLt, a profile's GEMM samples) times, and so what a calibration is fitted to.
  SimTime GemmKernel(const GemmShape& gemm) const;
  SimTime Attention(const AttentionShape& attention) const override;
  SimTime MemoryBound(const MemoryShape& memory) const override;

 private:
  double PeakFlopsPerS(Dtype dtype) const;
  double HbmBytesPerS() const;

  GpuSpec gpu_;
};

}  // namespace loom

#endif  // LOOM_COST_COMPUTE_MODEL_H_
