#!/usr/bin/env python3
"""Measures compute as it runs inside a training step, on a lent GPU machine (issue 42).

Run there with the machine's own python3 (the one that holds PyTorch and Triton):
    python3 tools/compute_in_step.py [--dry-run] [OUTDIR [SECTION,...]]
It writes OUTDIR/compute_in_step.json (schema loom.compute_in_step/1, docs/schemas/), rewritten after
every measurement so an interrupted run keeps what it finished. --dry-run prints the sections and
their estimated seconds without importing PyTorch (what tools/gpu_validate --dry-run shows).

  sustained    a bf16 GEMM (8192^3, random operands) held for 30 s, timed in half-second chunks,
               against the same GEMM in 100 ms bursts after 3 s of rest (the burst a micro-benchmark
               sees), and 5 s on zero operands (less switching power); the SM clock, power draw,
               temperature and clock-throttle reasons sampled by NVML every 20 ms throughout.
               Mechanism 1: the clock a GPU sustains under back-to-back tensor-core work.
  contention   a GEMM and a causal attention forward each alone and beside an HBM-streaming copy
               kernel (Triton, one program per SM it is given, 512 threads each: the shape of
               NCCL's one-CTA-per-channel kernels) on 8, 16 and 32 SMs on a second stream; the
               compute kernel's time and the copy's bandwidth, each alone and together.
               Mechanism 2: communication kernels taking SMs and HBM from overlapped compute.
  attention    scaled_dot_product_attention forward and backward, causal, per backend (flash,
               cuDNN, memory-efficient), head dims 64/128/192/256 over sequence 1k-32k (32k tokens
               per call), and grouped-query attention (32 query, 8 key/value heads).
               Mechanism 3: attention per kernel family, shape and pass.
  elementwise  the element-wise kernels of one eager-PyTorch Llama layer (HF modeling_llama's
               RMSNorm, rotary embedding, SiLU gate, residual adds; hidden 4096, 32 heads, 8 KV
               heads, FFN 14336, seq 4096, bf16), each op timed alone with the bytes it reads and
               writes, at the layer's size and at one row (the per-kernel floor); and one profiled
               forward+backward of the layer listing every kernel it launched with its time.
               Mechanism 4: small kernels at their real rates.
"""
import json
import math
import os
import platform
import statistics
import sys
import threading
import time

SCHEMA = "loom.compute_in_step/1"

# The plan, shared by the measurements and by --dry-run's estimate.
GEMM_N = 8192
HOLD_S = 30.0
CHUNK_S = 0.5
BURST_S = 0.1
BURST_REST_S = 3.0
BURSTS = 5
ZEROS_S = 5.0
SAMPLE_S = 0.02
COPY_SMS = (8, 16, 32)
COPY_WARPS = 16  # 512 threads: NCCL_MAX_NTHREADS is 640, its simple/LL128 kernels run 512-640
ATTN_BACKENDS = ("flash", "cudnn", "efficient")
ATTN_HEAD_DIMS = (64, 128, 192, 256)
ATTN_SEQS = (1024, 2048, 4096, 8192, 16384, 32768)
ATTN_TOKENS = 32768
ATTN_HEADS = 16
LLAMA = {"hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "seq": 4096, "eps": 1e-5}

ESTIMATE_S = {
    # warm-up, the held run, the bursts with their rests, zeros
    "sustained": 5 + HOLD_S + BURSTS * (BURST_REST_S + BURST_S) + ZEROS_S + BURST_REST_S,
    # Triton's compile, then 2 kernels x (alone + 3 copy widths) x about 2 s each
    "contention": 20 + 2 * (1 + len(COPY_SMS)) * 2,
    # about 0.3 s per shape, pass and backend (10 timed runs each of up to ~30 ms) plus set-up
    "attention": 10 + len(ATTN_BACKENDS) * len(ATTN_HEAD_DIMS) * len(ATTN_SEQS) * 2 * 0.3,
    "elementwise": 30,
}

OUT = "."
RESULT = {"schema": SCHEMA}


def save():
    path = os.path.join(OUT, "compute_in_step.json")
    with open(path + ".part", "w") as f:
        json.dump(RESULT, f, indent=1)
    os.replace(path + ".part", path)


# --- NVML sampling -------------------------------------------------------------------------------

class Sampler:
    """SM clock (MHz), power (W), temperature (C) and throttle-reason bits every SAMPLE_S seconds,
    each tagged with the phase set by phase(); NVML (nvidia-ml-py) or nothing where it is absent."""

    def __init__(self):
        self.samples = []
        self.label = "idle"
        self.error = None
        self._stop = threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception as e:  # no NVML: the timings still stand, without clocks
            self._nvml = None
            self.error = repr(e)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self):
        n, h = self._nvml, self._handle
        reasons = None
        try:
            reasons = n.nvmlDeviceGetCurrentClocksEventReasons(h)
        except Exception:
            try:
                reasons = n.nvmlDeviceGetCurrentClocksThrottleReasons(h)
            except Exception:
                pass
        return {"t": time.perf_counter(), "phase": self.label,
                "sm_MHz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
                "power_W": n.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "temp_C": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
                "reasons": reasons}

    def _run(self):
        while not self._stop.is_set():
            try:
                self.samples.append(self._read())
            except Exception as e:
                self.error = repr(e)
                return
            time.sleep(SAMPLE_S)

    def start(self):
        if self._nvml:
            self._thread.start()

    def stop(self):
        self._stop.set()
        if self._nvml:
            self._thread.join()

    def phase(self, label):
        self.label = label

    def summary(self, label):
        rows = [s for s in self.samples if s["phase"] == label]
        if not rows:
            return None
        clocks = [s["sm_MHz"] for s in rows]
        power = [s["power_W"] for s in rows]
        reasons = 0
        for s in rows:
            reasons |= s["reasons"] or 0
        return {"samples": len(rows), "sm_MHz_median": statistics.median(clocks),
                "sm_MHz_min": min(clocks), "sm_MHz_max": max(clocks),
                "power_W_median": statistics.median(power), "power_W_max": max(power),
                "temp_C_max": max(s["temp_C"] for s in rows), "throttle_reasons_or": reasons}

    def static(self):
        if not self._nvml:
            return {"error": self.error}
        n, h = self._nvml, self._handle
        out = {}
        for key, fn in (("max_sm_MHz", lambda: n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM)),
                        ("power_limit_W", lambda: n.nvmlDeviceGetPowerManagementLimit(h) / 1000.0),
                        ("driver", lambda: n.nvmlSystemGetDriverVersion())):
            try:
                value = fn()
                out[key] = value.decode() if isinstance(value, bytes) else value
            except Exception as e:
                out[key] = repr(e)
        return out


# --- helpers -------------------------------------------------------------------------------------

def environment(sampler):
    import torch
    p = torch.cuda.get_device_properties(0)
    RESULT["environment"] = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": p.name, "sms": p.multi_processor_count, "memory_bytes": p.total_memory,
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(), "python": platform.python_version(),
        "nvml": sampler.static(),
    }
    try:
        import triton
        RESULT["environment"]["triton"] = triton.__version__
    except Exception as e:
        RESULT["environment"]["triton"] = repr(e)
    save()


def event_time_s(fn, reps, stream=None):
    """Median seconds of fn() over reps runs, by CUDA events on |stream| (default: current)."""
    import torch
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    return statistics.median(times)


# --- sustained -----------------------------------------------------------------------------------

def section_sustained(sampler):
    import torch
    n = GEMM_N
    flops = 2.0 * n * n * n
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        a @ b
    torch.cuda.synchronize()
    one = event_time_s(lambda: a @ b, 5)
    out = {"gemm": {"m": n, "n": n, "k": n, "dtype": "bf16"}, "single_s": one}

    def run_for(seconds, x, y):
        count = max(1, int(seconds / one))
        s = event_time_s(lambda: [x @ y for _ in range(count)], 1)
        return count, s

    bursts = []
    for i in range(BURSTS):
        sampler.phase("rest")
        time.sleep(BURST_REST_S)
        sampler.phase("burst")
        count, s = run_for(BURST_S, a, b)
        bursts.append({"gemms": count, "s": s, "tflops": count * flops / s / 1e12})
    out["bursts"] = bursts
    out["burst_clocks"] = sampler.summary("burst")
    out["rest_clocks"] = sampler.summary("rest")
    RESULT["sustained"] = out
    save()

    sampler.phase("held")
    chunks = []
    t_end = time.perf_counter() + HOLD_S
    t0 = time.perf_counter()
    while time.perf_counter() < t_end:
        count, s = run_for(CHUNK_S, a, b)
        chunks.append({"t_s": time.perf_counter() - t0, "gemms": count,
                       "tflops": count * flops / s / 1e12})
    out["held"] = chunks
    out["held_clocks"] = sampler.summary("held")
    last = chunks[len(chunks) // 2:]
    out["held_tflops_second_half_median"] = statistics.median(c["tflops"] for c in last)
    out["burst_tflops_median"] = statistics.median(c["tflops"] for c in bursts)
    out["held_over_burst"] = out["held_tflops_second_half_median"] / out["burst_tflops_median"]
    save()

    sampler.phase("rest2")
    time.sleep(BURST_REST_S)
    z = torch.zeros(n, n, device="cuda", dtype=torch.bfloat16)
    sampler.phase("zeros")
    count, s = run_for(ZEROS_S, z, z)
    out["zeros"] = {"gemms": count, "s": s, "tflops": count * flops / s / 1e12,
                    "clocks": sampler.summary("zeros")}
    save()
    del a, b, z
    torch.cuda.empty_cache()


# --- contention ----------------------------------------------------------------------------------

def stream_copy_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def stream_copy(src, dst, n_chunks, reps, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        offs = tl.arange(0, BLOCK)
        for _ in range(reps):
            for c in range(pid, n_chunks, nprog):
                p = c.to(tl.int64) * BLOCK + offs
                tl.store(dst + p, tl.load(src + p))

    return stream_copy


def section_contention(sampler):
    import torch
    import torch.nn.functional as F
    sampler.phase("contention")
    copy = stream_copy_kernel()
    block = 4096
    elements = 256 * 1024 * 1024  # 1 GiB of fp32 each way: far beyond L2
    n_chunks = elements // block
    src = torch.ones(elements, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    copy_bytes = 2.0 * elements * 4

    n = GEMM_N
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    q, k, v = (torch.randn(4, 32, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    kernels = {
        "gemm_bf16_8192": (lambda: a @ b, 2.0 * n ** 3),
        "attention_fwd_causal_b4_h32_s4096_d128":
            (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             4.0 * 4 * 32 * 4096 * 4096 * 128 / 2),
    }
    side = torch.cuda.Stream()
    main = torch.cuda.current_stream()
    rows = []
    copy_alone = {}
    for sms in COPY_SMS:
        copy[(sms,)](src, dst, n_chunks, 1, BLOCK=block, num_warps=COPY_WARPS)  # compile, warm
        torch.cuda.synchronize()
        s = event_time_s(lambda: copy[(sms,)](src, dst, n_chunks, 1, BLOCK=block,
                                              num_warps=COPY_WARPS), 3)
        copy_alone[sms] = s
        rows.append({"kernel": "copy", "copy_sms": sms, "together": False, "s": s,
                     "copy_GBps": copy_bytes / s / 1e9})
    RESULT["contention"] = {"copy_bytes_per_pass": copy_bytes, "copy_warps": COPY_WARPS, "rows": rows}
    save()

    for name, (fn, flops) in kernels.items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        single = event_time_s(fn, 5)
        reps = max(5, int(1.0 / single))  # about a second of the kernel back to back
        alone = event_time_s(lambda: [fn() for _ in range(reps)], 1) / reps
        rows.append({"kernel": name, "copy_sms": 0, "together": False, "s": alone,
                     "tflops": flops / alone / 1e12})
        save()
        for sms in COPY_SMS:
            # The copy runs on the side stream for longer than the compute window (passes sized
            # from its time alone), launched first so the compute kernels start beside it.
            passes = int(math.ceil(reps * alone * 1.5 / copy_alone[sms])) + 1
            c0 = torch.cuda.Event(enable_timing=True)
            c1 = torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(side):
                c0.record(side)
                copy[(sms,)](src, dst, n_chunks, passes, BLOCK=block, num_warps=COPY_WARPS)
                c1.record(side)
            time.sleep(0.01)  # let the copy reach the GPU first
            together = event_time_s(lambda: [fn() for _ in range(reps)], 1, main) / reps
            c1.synchronize()
            copy_s = c0.elapsed_time(c1) / 1000.0
            rows.append({"kernel": name, "copy_sms": sms, "together": True, "s": together,
                         "tflops": flops / together / 1e12, "slowdown": together / alone,
                         "copy_passes": passes, "copy_s": copy_s,
                         "copy_GBps_mean_over_its_run": passes * copy_bytes / copy_s / 1e9,
                         "copy_alone_GBps": copy_bytes / copy_alone[sms] / 1e9})
            save()
    del src, dst, a, b, q, k, v
    torch.cuda.empty_cache()


# --- attention -----------------------------------------------------------------------------------

def sdpa_backend(name):
    from torch.nn.attention import SDPBackend
    return {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}[name]


def attention_row(backend, batch, heads, kv_heads, seq, dim):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    row = {"backend": backend, "batch": batch, "heads": heads, "kv_heads": kv_heads, "seq": seq,
           "head_dim": dim, "causal": True}
    fwd_flops = 4.0 * batch * heads * seq * seq * dim / 2  # causal: half the score matrix
    try:
        q = torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16,
                        requires_grad=True)
        k, v = (torch.randn(batch, kv_heads, seq, dim, device="cuda", dtype=torch.bfloat16,
                            requires_grad=True) for _ in range(2))
        gqa = {"enable_gqa": True} if kv_heads != heads else {}
        with sdpa_kernel([sdpa_backend(backend)]):
            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
            for _ in range(2):
                fwd()
            row["fwd_s"] = event_time_s(fwd, 5)
            out = fwd()
            grad = torch.randn_like(out)
            bwd = lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)
            for _ in range(2):
                bwd()
            row["bwd_s"] = event_time_s(bwd, 5)
        row["fwd_tflops"] = fwd_flops / row["fwd_s"] / 1e12
        # The backward's five products against the forward's two (FlashAttention-2, Section 3.1).
        row["bwd_tflops"] = 2.5 * fwd_flops / row["bwd_s"] / 1e12
    except Exception as e:  # a backend that refuses a shape says so; the others go on
        row["error"] = repr(e)[:300]
    return row


def section_attention(sampler):
    import torch
    sampler.phase("attention")
    rows = []
    RESULT["attention"] = rows
    for backend in ATTN_BACKENDS:
        for dim in ATTN_HEAD_DIMS:
            for seq in ATTN_SEQS:
                rows.append(attention_row(backend, ATTN_TOKENS // seq, ATTN_HEADS, ATTN_HEADS, seq, dim))
                save()
                torch.cuda.empty_cache()
        for seq in (4096, 8192):
            rows.append(attention_row(backend, ATTN_TOKENS // seq, 32, 8, seq, 128))
            save()


# --- elementwise ---------------------------------------------------------------------------------

def nbytes(*tensors):
    return float(sum(t.numel() * t.element_size() for t in tensors))


def section_elementwise(sampler):
    import torch
    import torch.nn.functional as F
    sampler.phase("elementwise")
    c = LLAMA
    h, heads, kvh, ffn, eps = c["hidden"], c["heads"], c["kv_heads"], c["ffn"], c["eps"]
    d = h // heads
    out = {"layer": dict(c), "ops": []}
    RESULT["elementwise"] = out

    def ops_at(tokens):
        """(name, fn, bytes read + written) of the layer's element-wise ops on |tokens| rows, as
        HF modeling_llama runs them in eager mode: RMSNorm in fp32, rotate_half rotary."""
        x = torch.randn(tokens, h, device="cuda", dtype=torch.bfloat16)
        x32 = x.float()
        var = x32.pow(2).mean(-1, keepdim=True)
        w = torch.ones(h, device="cuda", dtype=torch.bfloat16)
        qh = torch.randn(1, heads, tokens, d, device="cuda", dtype=torch.bfloat16)
        cos = torch.randn(1, 1, tokens, d, device="cuda", dtype=torch.bfloat16)
        half = qh[..., d // 2:]
        g = torch.randn(tokens, ffn, device="cuda", dtype=torch.bfloat16)
        u = torch.randn_like(g)
        r = torch.randn_like(x)
        return [
            ("rmsnorm.to_fp32", lambda: x.float(), nbytes(x, x32)),
            ("rmsnorm.pow", lambda: x32.pow(2), nbytes(x32, x32)),
            ("rmsnorm.mean", lambda: x32.mean(-1, keepdim=True), nbytes(x32, var)),
            ("rmsnorm.rsqrt_add", lambda: torch.rsqrt(var + eps), nbytes(var, var)),
            ("rmsnorm.mul_rstd", lambda: x32 * var, nbytes(x32, var, x32)),
            ("rmsnorm.to_bf16", lambda: x32.to(torch.bfloat16), nbytes(x32, x)),
            ("rmsnorm.mul_weight", lambda: w * x, nbytes(w, x, x)),
            ("rotary.neg", lambda: -half, nbytes(half, half)),
            ("rotary.cat", lambda: torch.cat((-half, half), dim=-1), nbytes(half, half, qh)),
            ("rotary.mul_cos", lambda: qh * cos, nbytes(qh, cos, qh)),
            ("rotary.add", lambda: qh + qh, nbytes(qh, qh, qh)),
            ("mlp.silu", lambda: F.silu(g), nbytes(g, g)),
            ("mlp.mul_gate", lambda: g * u, nbytes(g, u, g)),
            ("residual.add", lambda: x + r, nbytes(x, r, x)),
        ]

    for tokens in (c["seq"], 1):
        for name, fn, moved in ops_at(tokens):
            for _ in range(3):
                fn()
            s = event_time_s(fn, 20)
            out["ops"].append({"op": name, "tokens": tokens, "bytes": moved, "s": s,
                               "GBps": moved / s / 1e9})
        save()
        torch.cuda.empty_cache()

    out["profiled_layer"] = profiled_llama_layer()
    save()


def profiled_llama_layer():
    """Every kernel one eager forward+backward of the Llama layer launches, with its GPU time."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    c = LLAMA
    h, heads, kvh, ffn, eps, seq = c["hidden"], c["heads"], c["kv_heads"], c["ffn"], c["eps"], c["seq"]
    d = h // heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x):
            x32 = x.float()
            x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
            return self.weight * x32.to(x.dtype)

    def rotate_half(t):
        return torch.cat((-t[..., d // 2:], t[..., : d // 2]), dim=-1)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = RMSNorm(), RMSNorm()
            self.q = nn.Linear(h, h, bias=False)
            self.k = nn.Linear(h, kvh * d, bias=False)
            self.v = nn.Linear(h, kvh * d, bias=False)
            self.o = nn.Linear(h, h, bias=False)
            self.gate = nn.Linear(h, ffn, bias=False)
            self.up = nn.Linear(h, ffn, bias=False)
            self.down = nn.Linear(ffn, h, bias=False)

        def forward(self, x, cos, sin):
            t = self.n1(x)
            q = self.q(t).view(1, seq, heads, d).transpose(1, 2)
            k = self.k(t).view(1, seq, kvh, d).transpose(1, 2)
            v = self.v(t).view(1, seq, kvh, d).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + self.o(a.transpose(1, 2).reshape(1, seq, h))
            t = self.n2(x)
            return x + self.down(F.silu(self.gate(t)) * self.up(t))

    layer = Layer().cuda().to(torch.bfloat16)
    x = torch.randn(1, seq, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    cos = torch.randn(1, 1, seq, d, device="cuda", dtype=torch.bfloat16)
    sin = torch.randn_like(cos)

    def step():
        layer(x, cos, sin).sum().backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = []
    for e in prof.key_averages():
        # Kernels have device time of their own; the CPU-side ops that launched them have none.
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = getattr(e, "self_cuda_time_total", 0.0)
        if us and us > 0 and getattr(e, "cpu_time_total", 0.0) == 0:
            kernels.append({"name": e.key[:160], "count": e.count, "us": us})
    wall = event_time_s(step, 5)
    return {"kernels": kernels, "kernel_names": len(kernels),
            "kernel_launches": sum(k["count"] for k in kernels),
            "kernel_us_sum": sum(k["us"] for k in kernels), "step_wall_s": wall}


# --- main ----------------------------------------------------------------------------------------

SECTIONS = {"sustained": section_sustained, "contention": section_contention,
            "attention": section_attention, "elementwise": section_elementwise}


def main(argv):
    global OUT
    dry_run = "--dry-run" in argv
    args = [a for a in argv if a != "--dry-run"]
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    OUT = args[0] if args else os.environ.get("OUT", ".")
    chosen = args[1].split(",") if len(args) > 1 else list(SECTIONS)
    unknown = [c for c in chosen if c not in SECTIONS]
    if unknown:
        print(f"compute_in_step.py: unknown section {unknown[0]!r}; the sections are "
              f"{', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    if dry_run:
        for name in chosen:
            print(f"  {name}: ~{int(ESTIMATE_S[name] + 0.5)} s")
        print(f"  total: ~{int(sum(ESTIMATE_S[n] for n in chosen) + 0.5)} s")
        return 0
    os.makedirs(OUT, exist_ok=True)
    sampler = Sampler()
    sampler.start()
    try:
        environment(sampler)
        print("environment", RESULT["environment"], flush=True)
        for name in chosen:
            t0 = time.perf_counter()
            try:
                SECTIONS[name](sampler)
            except Exception as e:  # one section failing keeps the others' results
                RESULT.setdefault("errors", {})[name] = repr(e)[:500]
                print("section", name, "failed:", repr(e), flush=True)
            RESULT.setdefault("section_s", {})[name] = round(time.perf_counter() - t0, 1)
            save()
            print("section", name, "took", RESULT["section_s"][name], "s", flush=True)
    finally:
        sampler.stop()
        RESULT["nvml_error"] = sampler.error
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
