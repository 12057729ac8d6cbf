#!/usr/bin/env python3
"""Times megatron-core's own GPT layers on one GPU in eager mode, to see the host's share (issue 19).

On a lent GPU machine, with a copy of Megatron-LM's megatron/core carried beside the repository
(`git archive <commit> megatron/core | tar x -C .mcore`, .mcore ignored by git):
    PYTHONPATH=.mcore python3 tools/megatron_host_overhead.py OUTDIR [HxMBxLAYERS[xHEADS],...]
(LOOM_SEQ sets the sequence length, 1024 by default.)
Writes OUTDIR/megatron_host_overhead.json after every configuration. With LOOM_HOST_WAITS=1 it
also lists, per pass and for the optimizer step, the CPU calls that wait for the GPU
(synchronize, .item(), device-to-host copies, allocator calls) with their count and CPU time.

The model is megatron.core's GPTModel with the local layer spec (get_gpt_layer_local_spec: no
Transformer Engine, no apex on that machine, so WrappedTorchNorm and Megatron's unfused
DotProductAttention), bf16 weights, the fusions Megatron-LM's arguments turn on by default where
they need no extension (bias-GELU and bias-dropout-add through the JIT fuser), wrapped in
megatron.core's DistributedDataParallel (fp32 main grads, world size 1), hidden dropout and
attention dropout 0.1. For each (hidden, micro-batch): forward and backward timed apart (host issue
time and wall time), the kernels each pass launches by name, and the full step with
finish_grad_sync and the Megatron optimizer step (found-inf and grad-norm `.item()`s included).
"""
import json
import os
import statistics
import sys
import time
import traceback

import torch

from torch_host_overhead import timed  # tools/, beside this script

OUT = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
RESULT = {"schema": "loom.megatron_host_overhead/1", "rows": []}


def save():
    with open(os.path.join(OUT, "megatron_host_overhead.json"), "w") as f:
        json.dump(RESULT, f, indent=1)


def kernels(fn):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    by_name = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            by_name[e.name[:90]] = by_name.get(e.name[:90], 0) + 1
    return sum(by_name.values()), dict(sorted(by_name.items(), key=lambda kv: -kv[1]))


# CPU-side calls that make the host wait for the GPU, or that usually hide one.
SYNC_EVENTS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
               "aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::is_nonzero", "cudaMalloc",
               "cudaFree", "ncclKernel", "c10d::allreduce_", "nccl:all_reduce")


def host_waits(fn):
    """The CPU events of one call of fn that wait for (or talk to) the GPU, by name: count and
    total CPU milliseconds."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    waits = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            continue
        if any(e.name.startswith(n) for n in SYNC_EVENTS):
            count, ms = waits.get(e.name, (0, 0.0))
            waits[e.name] = (count + 1, ms + e.cpu_time_total / 1e3)
    return {k: {"count": c, "cpu_ms": round(t, 3)} for k, (c, t) in sorted(waits.items())}


def main():
    os.makedirs(OUT, exist_ok=True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(0)
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    from megatron.core import parallel_state
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    from megatron.core.transformer.module import Float16Module
    from megatron.core.transformer.transformer_config import TransformerConfig

    parallel_state.initialize_model_parallel(1, 1)
    model_parallel_cuda_manual_seed(1234)
    RESULT["environment"] = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                             "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    seq, vocab = int(os.environ.get("LOOM_SEQ", "1024")), 50304
    # HIDDENxMICROBATCHxLAYERS[xHEADS],...: several depths give the host cost per layer as a slope.
    configs = sys.argv[2] if len(sys.argv) > 2 else "1024x1x8,1024x8x8,2048x1x8,2048x8x8"
    for fields in (tuple(int(v) for v in c.split("x")) for c in configs.split(",")):
        h, mb, depth = fields[:3]
        heads = fields[3] if len(fields) > 3 else 16
        row = {"hidden": h, "heads": heads, "seq": seq, "layers": depth, "micro_batch": mb}
        try:
            cfg = TransformerConfig(num_layers=depth, hidden_size=h, num_attention_heads=heads,
                                    bf16=True, params_dtype=torch.bfloat16, hidden_dropout=0.1,
                                    attention_dropout=0.1, bias_activation_fusion=True,
                                    bias_dropout_fusion=True, masked_softmax_fusion=False,
                                    gradient_accumulation_fusion=False)
            # Megatron-LM's get_model wraps a bf16 model in Float16Module (training.py).
            model = Float16Module(cfg, GPTModel(config=cfg,
                                                transformer_layer_spec=get_gpt_layer_local_spec(),
                                                vocab_size=vocab, max_sequence_length=seq)).cuda()
            ddp = DistributedDataParallel(
                config=cfg, module=model,
                ddp_config=DistributedDataParallelConfig(grad_reduce_in_fp32=True,
                                                         overlap_grad_reduce=False,
                                                         use_distributed_optimizer=False))
            tokens = torch.randint(0, vocab, (mb, seq), device="cuda")
            positions = torch.arange(seq, device="cuda").unsqueeze(0).expand(mb, seq)
            mask = ~torch.tril(torch.ones(seq, seq, dtype=torch.bool, device="cuda")).view(
                1, 1, seq, seq)
            holder = {}

            def fwd():
                holder["loss"] = ddp(tokens, positions, mask, labels=tokens).float().mean()

            def bwd():
                holder["loss"].backward()

            for _ in range(3):
                ddp.zero_grad_buffer()
                fwd(), bwd()
            fh, fw, bh, bw = [], [], [], []
            for _ in range(5):
                ddp.zero_grad_buffer()
                a, b = timed(fwd, reps=1)
                c, d = timed(bwd, reps=1)
                fh.append(a), fw.append(b), bh.append(c), bw.append(d)
            row.update(fwd_host_s=statistics.median(fh), fwd_wall_s=statistics.median(fw),
                       bwd_host_s=statistics.median(bh), bwd_wall_s=statistics.median(bw))
            ddp.zero_grad_buffer()
            row["fwd_kernels"], row["fwd_kernels_by_name"] = kernels(fwd)
            row["bwd_kernels"], row["bwd_kernels_by_name"] = kernels(bwd)
            if os.environ.get("LOOM_HOST_WAITS"):
                ddp.zero_grad_buffer()
                row["fwd_host_waits"] = host_waits(fwd)
                row["bwd_host_waits"] = host_waits(bwd)
            print("megatron", {k: v for k, v in row.items() if not k.endswith("by_name")},
                  flush=True)
            RESULT["rows"].append(row)
            save()
            try:
                from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

                opt = get_megatron_optimizer(
                    OptimizerConfig(optimizer="adam", lr=1e-4, bf16=True, clip_grad=1.0,
                                    use_distributed_optimizer=False), [ddp])
                row["optimizer_class"] = type(opt).__name__

                def step():
                    ddp.zero_grad_buffer()
                    opt.zero_grad()
                    fwd()
                    bwd()
                    ddp.finish_grad_sync()
                    opt.step()

                for _ in range(3):
                    step()
                row["step_host_s"], row["step_wall_s"] = timed(step, reps=5)

                def opt_only():
                    ddp.finish_grad_sync()
                    opt.step()

                row["finish_and_optimizer_host_s"], row["finish_and_optimizer_wall_s"] = timed(
                    opt_only, reps=5)
                row["optimizer_kernels"], row["optimizer_kernels_by_name"] = kernels(opt_only)
                if os.environ.get("LOOM_HOST_WAITS"):
                    row["optimizer_host_waits"] = host_waits(opt_only)
                del opt
            except Exception:
                row["optimizer_error"] = traceback.format_exc()[-1500:]
            print("megatron step", {k: v for k, v in row.items()
                                    if k.startswith(("step", "finish", "optimizer_k",
                                                     "optimizer_c", "optimizer_e"))
                                    and not k.endswith("by_name")}, flush=True)
            save()
            del ddp, model
            torch.cuda.empty_cache()
        except Exception:
            row["error"] = traceback.format_exc()[-3000:]
            RESULT["rows"].append(row)
            save()
            print(row["error"], flush=True)
            break


if __name__ == "__main__":
    main()
