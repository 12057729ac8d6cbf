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

// The clocks a kernel runs at. A profile times each kernel in a short burst (loom probe: a few
// warm-up runs and 20 timed ones, then host work), in which the GPU runs at its boost clock unless
// the kernel is long. Work that runs back to back draws power; where it would draw more than the
// GPU's limit, the firmware lowers the SM clock until it holds (NVML's
// clocks_event_reasons.sw_power_cap). On the committed H100 run (hardware/validation/2026-11-27/)
// bf16 GEMMs of under 1 ms reach up to 818 TFLOP/s while those held for 2 ms or more level off at
// 627-762, and the grid measured back to back after the profile ran the same shapes 6-12% slower
// than early on (8192^3: 1,412 then 1,598 us; 4096^3: 178 then 190 us), short ones too; while that
// run's training steps of 125M-1.3B models, whose tensor rate over their compute comes to 370-610
// TFLOP/s, ran at the profile's rates (validate: the burst model within -1 to -6%). So the power a
// GPU draws follows the tensor rate of what it runs, averaged over the work, and the ceiling is on
// that average: a "powerline" under the roofline (Choi et al. 2013, "A Roofline Model of Energy",
// IPDPS: at a power cap the rate is bounded by power over energy per FLOP). Its rate is the
// calibration's sustained_tensor_fraction of the dense peak.
enum class ClockRegime {
  // As a profile times the kernel, at the clock of the calibration: what the efficiencies are
  // fitted to. A training step runs in this regime with the tensor clock of its whole compute
  // (TensorClock).
  kBurst,
  // The kernel run back to back by itself, as a profile's long GEMMs and a grid measured after a
  // profile ran: its own tensor rate is the average, so its tensor-core part takes at least its
  // FLOPs over the sustained rate.
  kSustained,
};

// The SM clock, as a fraction of the calibration's, at which a GPU runs work whose tensor FLOPs
// over its compute time at the calibration's clock come to |demand_flops_per_s|: 1 up to the
// dtype's sustained rate (peak x sustained_tensor_fraction), else that rate over the demand. 1
// without a fraction.
double TensorClock(const GpuSpec& gpu, Dtype dtype, double demand_flops_per_s);

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
// - Fused attention: where the calibration has the pass's tiles for the kernel's family
//   (ComputeCalibration::AttentionTiles: cuDNN's fitted on the probe's kernels, FlashAttention-2's
//   and the Triton port's on their papers' benchmarks), the tile model of cost/attention_tiles.h
//   (CTAs over SMs, products and softmax per score, diagonal blocks, waves, a fixed latency that
//   stands for the kernel overhead); otherwise its executed FLOPs (causal masking halves them; the
//   backward recomputes the scores) at the fitted attention efficiency. Either with the same
//   memory floor. A family without tiles or efficiency is refused before costing
//   (CostStageChunks).
// - fp8 GEMM: the kernel above at the fp8 peak and efficiency; Transformer Engine's casts of its
//   bf16 operands to fp8 are memory-bound ops of the workload (workload/fp8_casts.h).
// - Memory-bound kernels: bytes over the achieved fraction of HBM bandwidth, the row reductions'
//   own fraction where the calibration has one (MemoryAccess, core/memory_access.h).
// - Clocks: at a tensor clock below 1 (a step at its power limit, TensorClock) the tensor-core
//   part of a GEMM (its main loop and waves) and of fused attention takes 1 / clock as long. Under
//   ClockRegime::kSustained, where the calibration has the dtype's sustained_tensor_fraction, that
//   part takes at least its FLOPs (2 m n k per product; attention's executed FLOPs) over the
//   sustained rate. Memory-bound kernels, the memory floors and the fixed overheads keep their
//   times: the power governor lowers the SM clock, not the HBM's.
// Every kernel also pays the fitted per-kernel overhead. A value the calibration lacks falls back
// to the datasheet: efficiency 1, full bandwidth, no overhead, no operand term, no ceiling.
class RooflineComputeModel : public ComputeModel {
 public:
  // REQUIRES: |gpu| has a peak for every dtype it will be asked to time.
  // REQUIRES: 0 < |tensor_clock| <= 1.
  explicit RooflineComputeModel(const GpuSpec& gpu, ClockRegime clocks = ClockRegime::kBurst,
                                double tensor_clock = 1.0);

  // GemmKernel: an fp8 GEMM's casts are ops of their own (workload/fp8_casts.h).
  SimTime Gemm(const GemmShape& gemm) const override;
  // The tensor-core kernel alone, with operands already in |gemm.dtype|: what a GEMM benchmark
  // (cuBLASLt, a profile's GEMM samples) times, and so what a calibration is fitted to.
  SimTime GemmKernel(const GemmShape& gemm) const;
  SimTime Attention(const AttentionShape& attention) const override;
  SimTime MemoryBound(const MemoryShape& memory) const override;

  const GpuSpec& gpu() const { return gpu_; }

 private:
  double PeakFlopsPerS(Dtype dtype) const;
  // The HBM bandwidth kernels of |access| reach; GEMM and attention traffic streams.
  double HbmBytesPerS(MemoryAccess access = MemoryAccess::kStreaming) const;
  // The HBM bandwidth of a GEMM whose operand and result bytes bound it: the calibration's
  // gemm_memory_bandwidth_fraction where measured (cuBLAS's batched GEMMs of unfused attention on
  // A100 reach about half of HBM; tests/reference/attention_tables.h), else HbmBytesPerS().
  double GemmHbmBytesPerS() const;
  // |tensor_s| of |flops| in |dtype| at the tensor clock, no faster than the sustained ceiling
  // under kSustained.
  double Clocked(double tensor_s, double flops, Dtype dtype) const;

  GpuSpec gpu_;
  ClockRegime clocks_;
  double tensor_clock_;
};

}  // namespace loom

#endif  // LOOM_COST_COMPUTE_MODEL_H_
