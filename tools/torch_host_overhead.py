#!/usr/bin/env python3
"""Measures what eager PyTorch costs the host per GPU op, on a lent GPU machine (issue 19).

Run there with the machine's own python3 (the one that holds PyTorch):
    python3 tools/torch_host_overhead.py [OUTDIR [SECTION,...]]
It writes OUTDIR/torch_host_overhead.json (default $OUT, else .), rewritten after every section so
an interrupted run keeps what it measured. Three sections:

  ops        one tiny op (64x64 bf16) issued N times in a row, without and with autograd recording,
             and the backward of the recorded chain: host microseconds per op (time until the Python
             loop returns) beside wall microseconds per op (until the GPU has finished). When the
             host time per op exceeds the kernel's own time, the GPU waits for the CPU.
  sync       what one blocking point costs: torch.cuda.synchronize() on an idle GPU and a
             `.item()` of a small reduction (the loss / grad-norm / found-inf pattern).
  layers     a GPT layer written in plain PyTorch (LayerNorm, fused QKV, SDPA causal attention,
             output projection, GELU MLP, hidden dropout 0.1; bf16 weights), 8 layers deep, for
             hidden 1024 and 2048 at seq 1024 and micro-batch 1..8: forward+backward in eager mode
             (wall and the host's issue time), the same step replayed as one CUDA graph (the GPU's
             own time, no per-op host cost), and one profiled step (kernels launched per step and
             the sum of their durations).
  passes     forward and backward apart for two of those configurations: each pass's host issue
             time, wall time and kernels launched, by kernel name.
  optimizer  AdamW over those layers' parameters, foreach and fused, eager.

This is plain PyTorch, not Megatron-LM: it measures the per-op host cost of the eager stack
(Python, the dispatcher, autograd, the CUDA launch), which is what a framework profile needs; the
number of kernels a framework launches per layer is the framework's own.
"""
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from host_machine import cpu_model  # noqa: E402

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
RESULT = {"schema": "loom.torch_host_overhead/1"}
DEV = "cuda"


def save():
    with open(os.path.join(OUT, "torch_host_overhead.json"), "w") as f:
        json.dump(RESULT, f, indent=1)




def environment():
    p = torch.cuda.get_device_properties(0)
    RESULT["environment"] = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": p.name,
        "sms": p.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
    }
    save()


def timed(fn, reps=5):
    """Median host and wall seconds of fn(); fn returns after issuing its work."""
    hosts, walls = [], []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        hosts.append(t1 - t0)
        walls.append(t2 - t0)
    return statistics.median(hosts), statistics.median(walls)


def section_ops():
    n = 2000
    x = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    ops = {
        "add": lambda y: y + x,
        "mul_scalar": lambda y: y * 1.0001,
        "gelu": F.gelu,
        "dropout": lambda y: F.dropout(y, 0.1, True),
        "layer_norm": lambda y: F.layer_norm(y, (64,)),
        "linear": lambda y: F.linear(y, w),
        "softmax": lambda y: torch.softmax(y, -1),
        "transpose_contiguous": lambda y: y.t().contiguous(),
    }
    rows = {}
    for name, op in ops.items():
        def nograd():
            with torch.no_grad():
                y = x
                for _ in range(n):
                    y = op(y)

        for _ in range(2):
            nograd()
        h0, w0 = timed(nograd)

        holder = {}

        def fwd_grad():
            y = x.detach().requires_grad_(True)
            for _ in range(n):
                y = op(y)
            holder["y"] = y

        def bwd():
            holder["y"].float().sum().backward()

        hf, wf = timed(fwd_grad, reps=1)
        fwd_grad()
        torch.cuda.synchronize()
        hb, wb = timed(bwd, reps=1)
        hfs, wfs, hbs, wbs = [], [], [], []
        for _ in range(4):
            a, b = timed(fwd_grad, reps=1)
            c, d = timed(bwd, reps=1)
            hfs.append(a), wfs.append(b), hbs.append(c), wbs.append(d)
        us = 1e6 / n
        rows[name] = {
            "ops": n,
            "nograd_host_us_per_op": h0 * us,
            "nograd_wall_us_per_op": w0 * us,
            "grad_fwd_host_us_per_op": statistics.median(hfs) * us,
            "grad_fwd_wall_us_per_op": statistics.median(wfs) * us,
            "bwd_host_us_per_op": statistics.median(hbs) * us,
            "bwd_wall_us_per_op": statistics.median(wbs) * us,
        }
        print("ops", name, {k: round(v, 2) for k, v in rows[name].items()}, flush=True)
    RESULT["ops"] = rows
    save()


def section_sync():
    x = torch.randn(1024, device=DEV)
    reps = 500
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        torch.cuda.synchronize()
    sync_us = (time.perf_counter() - t0) / reps * 1e6
    t0 = time.perf_counter()
    for _ in range(reps):
        x.sum().item()
    item_us = (time.perf_counter() - t0) / reps * 1e6
    # The launch alone: an empty-ish kernel issued many times without a sync.
    with torch.no_grad():
        def adds():
            for _ in range(reps):
                x.add_(0.0)
        adds()
        h, w = timed(adds)
    RESULT["sync"] = {
        "synchronize_idle_us": sync_us,
        "sum_item_us": item_us,
        "inplace_add_host_us_per_op": h / reps * 1e6,
        "inplace_add_wall_us_per_op": w / reps * 1e6,
    }
    print("sync", RESULT["sync"], flush=True)
    save()


class Layer(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        a = a.transpose(1, 2).reshape(b, s, h)
        x = x + F.dropout(self.proj(a), 0.1, self.training)
        m = self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x + F.dropout(m, 0.1, self.training)


def kernels_in_one_step(step):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    count, total_us = 0, 0.0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            count += 1
            total_us += e.device_time if hasattr(e, "device_time") else e.cuda_time
    return count, total_us * 1e-6


def section_layers():
    rows = []
    seq, depth = 1024, 8
    for h, heads in ((1024, 16), (2048, 16)):
        model = nn.Sequential(*[Layer(h, heads) for _ in range(depth)]).to(DEV, torch.bfloat16)
        model.train()
        for mb in (1, 2, 4, 8):
            x = torch.randn(mb, seq, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)

            def step():
                model(x).float().sum().backward()

            for _ in range(3):
                step()
            host_s, wall_s = timed(step, reps=5)
            row = {"hidden": h, "heads": heads, "seq": seq, "layers": depth, "micro_batch": mb,
                   "eager_wall_s": wall_s, "eager_host_issue_s": host_s}
            try:
                row["kernels_per_step"], row["kernel_time_sum_s"] = kernels_in_one_step(step)
            except Exception as e:  # the profiler is an extra; keep the timings without it
                row["profiler_error"] = repr(e)
            try:
                for p in model.parameters():
                    p.grad = None
                x.grad = None
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        step()
                torch.cuda.current_stream().wait_stream(side)
                for p in model.parameters():
                    p.grad = None
                x.grad = None
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    step()
                for _ in range(3):
                    g.replay()
                _, graph_s = timed(g.replay, reps=5)
                row["graph_wall_s"] = graph_s
                del g
            except Exception as e:
                row["graph_error"] = repr(e)
            for p in model.parameters():
                p.grad = None
            x.grad = None
            rows.append(row)
            print("layers", {k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()},
                  flush=True)
            RESULT["layers"] = rows
            save()
        del model
        torch.cuda.empty_cache()


def section_passes():
    """Forward and backward apart, for one small configuration: the host's issue time and wall
    time of each pass, and the kernels each pass launches by name (from the profiler)."""
    from torch.profiler import ProfilerActivity, profile

    seq, depth, rows = 1024, 8, []
    for h, mb in ((1024, 1), (2048, 8)):
        model = nn.Sequential(*[Layer(h, 16) for _ in range(depth)]).to(DEV, torch.bfloat16)
        x = torch.randn(mb, seq, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        holder = {}

        def fwd():
            holder["loss"] = model(x).float().sum()

        def bwd():
            holder["loss"].backward()

        for _ in range(3):
            fwd(), bwd()
        fh, fw, bh, bw = [], [], [], []
        for _ in range(5):
            a, b = timed(fwd, reps=1)
            c, d = timed(bwd, reps=1)
            fh.append(a), fw.append(b), bh.append(c), bw.append(d)
        row = {"hidden": h, "seq": seq, "layers": depth, "micro_batch": mb,
               "fwd_host_s": statistics.median(fh), "fwd_wall_s": statistics.median(fw),
               "bwd_host_s": statistics.median(bh), "bwd_wall_s": statistics.median(bw)}
        for name, fn in (("fwd", fwd), ("bwd", bwd)):
            if name == "fwd":
                ctx_fn = fwd
            else:
                fwd()
                torch.cuda.synchronize()
                ctx_fn = bwd
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                ctx_fn()
                torch.cuda.synchronize()
            kernels = {}
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    kernels[e.name[:90]] = kernels.get(e.name[:90], 0) + 1
            row[name + "_kernels"] = sum(kernels.values())
            row[name + "_kernels_by_name"] = dict(sorted(kernels.items(), key=lambda kv: -kv[1]))
        rows.append(row)
        print("passes", {k: v for k, v in row.items() if not k.endswith("by_name")}, flush=True)
        RESULT["passes"] = rows
        save()
        del model
        torch.cuda.empty_cache()


def section_optimizer():
    rows = []
    for h in (1024, 2048):
        model = nn.Sequential(*[Layer(h, 16) for _ in range(8)]).to(DEV)  # fp32 master weights
        params = list(model.parameters())
        for p in params:
            p.grad = torch.randn_like(p)
        for kind in ("foreach", "fused"):
            opt = torch.optim.AdamW(params, lr=1e-4, **{kind: True})
            for _ in range(3):
                opt.step()
            host_s, wall_s = timed(opt.step, reps=5)
            rows.append({"hidden": h, "layers": 8, "tensors": len(params),
                         "parameters": sum(p.numel() for p in params), "impl": kind,
                         "host_s": host_s, "wall_s": wall_s})
            print("optimizer", rows[-1], flush=True)
        del model, params, opt
        torch.cuda.empty_cache()
    RESULT["optimizer"] = rows
    save()


def main():
    os.makedirs(OUT, exist_ok=True)
    environment()
    print("environment", RESULT["environment"], flush=True)
    sections = {"sync": section_sync, "ops": section_ops, "layers": section_layers,
                "passes": section_passes, "optimizer": section_optimizer}
    chosen = sys.argv[2].split(",") if len(sys.argv) > 2 else list(sections)
    for name in chosen:
        section = sections[name]
        t0 = time.perf_counter()
        try:
            section()
        except Exception as e:
            RESULT.setdefault("errors", {})[name] = repr(e)
            save()
            print("section", name, "failed:", repr(e), flush=True)
        print("section", name, "took", round(time.perf_counter() - t0, 1), "s", flush=True)


if __name__ == "__main__":
    main()
