#!/usr/bin/env python3
"""Measures the host time per rank of a collective issued over a list of per-rank views (issue 43).

DeepSpeed's ZeRO-3 of 2021 (microsoft/DeepSpeed v0.3.14, deepspeed/runtime/zero/
partition_parameters.py) gathers each partitioned weight by itself: _allgather_param builds the
output as a Python list of world-size narrow() views of one flat tensor (copying the rank's own
shard into its view) and passes the list to torch.distributed.all_gather; _reduce_scatter_gradient
builds the input list the same way for torch.distributed.reduce_scatter. PyTorch's
ProcessGroupNCCL serves a list by gathering into a flat buffer of its own and copying each rank's
slice out (or each input in before a reduce-scatter): per rank one tensor index and one copy_.

This times, on the CPU (no GPU here), per rank of a group of 384-2240 (the group sizes of Narayanan et al. 2021's Table 2):
  narrow   DeepSpeed's loop: flat.narrow(0, p * i, p) appended to a list, with its rank check;
  copy     the list's per-rank work as Python does it: out[i].copy_(flat[i]) on small CPU tensors
           (the dispatcher and TensorIterator of one copy_, without a CUDA launch);
  persistent_views / persistent_copy
           _allgather_params' loop over the ranks for one persistent weight (_post_step gathers
           the norms and biases this way after every optimizer step): a narrow of the rank's
           gathered partition, a view and a narrow of the weight, without and with the copy_;
  coalesced_reduce_scatter
           later DeepSpeed's reduce_scatter_coalesced (38327e07, 2025-02-21,
           deepspeed/runtime/comm/coalesced_collectives.py) for one gradient: a slice per rank,
           their interleaving with the padding check, and the torch.cat of the list (on a GPU one
           batched copy; here a CPU copy of a small tensor).
On a GPU the copy_ also launches a copy (a CUDA launch of some microseconds); loom's framework file
adds the host time of one in-place CUDA op measured on a lent H100 instead (hardware/validation/
2026-11-27/torch_host_overhead.json, sync.inplace_add_host_us_per_op), which covers the launch.

Needs PyTorch for CPU: Debian's python3-torch, run with the system python3:
    /usr/bin/python3 tools/deepspeed_list_collective_host.py [OUTFILE]
It writes OUTFILE (default deepspeed_list_collective_host.json): per group size the median of 21
timed loops after 3 untimed ones in each of 5 processes, one intra-op thread, and the median of the
processes' medians, with the machine and library versions.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from host_machine import environment, report_rows, run_children, write_json  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--child" else \
    "deepspeed_list_collective_host.json"
REPEATS = 5
RANKS = (384, 640, 768, 1120, 1536, 2240)
SHARD = 4096  # elements of one rank's shard: the loops' cost does not depend on it




def timed(fn, warm=3, timed_runs=21):
    samples = []
    for i in range(warm + timed_runs):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        if i >= warm:
            samples.append(elapsed)
    return statistics.median(samples)


def measure():
    """Runs in a child process: prints one JSON list of rows."""
    import torch
    torch.set_num_threads(1)
    rows = []
    for n in RANKS:
        flat = torch.zeros(SHARD * n, dtype=torch.float16)
        shard = torch.ones(SHARD, dtype=torch.float16)
        rank = n // 2

        def narrow_loop():
            parts = []
            for i in range(n):
                parts.append(flat.narrow(0, SHARD * i, SHARD))
                if i == rank:
                    parts[i].data.copy_(shard, non_blocking=True)
            return parts

        parts = narrow_loop()
        staging = torch.empty(n, SHARD, dtype=torch.float16)

        def copy_loop():
            for i in range(n):
                parts[i].copy_(staging[i], non_blocking=True)

        # _allgather_params' loop for one persistent weight (a bias of 12288 parameters): per
        # rank whose slice holds part of it, a narrow of the gathered partition, a view and a
        # narrow of the weight, then the copy_ (timed apart: views alone, then with the copy).
        numel = 12288
        slice_numel = -(-numel // n)
        replicated = torch.empty(numel, dtype=torch.float16)
        gathered = [torch.empty(slice_numel, dtype=torch.float16) for _ in range(n)]

        def persistent_views():
            for i in range(n):
                start = i * slice_numel
                if start < numel:
                    count = min(numel - start, slice_numel)
                    part = gathered[i].narrow(0, 0, count)
                    replicated.view(-1).narrow(0, start, count)

        def persistent_loop():
            for i in range(n):
                start = i * slice_numel
                if start < numel:
                    count = min(numel - start, slice_numel)
                    part = gathered[i].narrow(0, 0, count)
                    replicated.view(-1).narrow(0, start, count).copy_(part)

        # Later DeepSpeed (38327e07, deepspeed/runtime/comm/coalesced_collectives.py
        # reduce_scatter_coalesced) slices each gradient of a bucket per rank in Python, interleaves
        # the slices in a list and concatenates it before one flat reduce-scatter: per rank and
        # gradient a slice, an append and the padding check, and torch.cat's share.
        gradient = torch.empty(SHARD * n, dtype=torch.float16)

        def coalesced_slices():
            flattened = gradient.view(-1)
            chunk = -(-flattened.numel() // n)
            parts = [flattened[rank * chunk:rank * chunk + chunk] for rank in range(0, n)]
            interleaved = []
            for rank in range(n):
                part = parts[rank]
                interleaved.append(part)
                if chunk - part.numel() > 0:
                    interleaved.append(torch.empty(chunk - part.numel(), dtype=part.dtype))
            return torch.cat(interleaved)

        ranks_holding = -(-numel // slice_numel)
        rows.append({
            "ranks": n,
            "narrow_us_per_rank": round(timed(narrow_loop) / n * 1e6, 3),
            "copy_us_per_rank": round(timed(copy_loop) / n * 1e6, 3),
            "persistent_views_us_per_rank": round(timed(persistent_views) / ranks_holding * 1e6, 3),
            "persistent_copy_us_per_rank": round(timed(persistent_loop) / ranks_holding * 1e6, 3),
            "coalesced_reduce_scatter_us_per_rank": round(timed(coalesced_slices) / n * 1e6, 3),
        })
    report_rows(rows, torch)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        measure()
        return
    runs, torch_version, threads = run_children(__file__, REPEATS)
    summary = []
    for i, row in enumerate(runs[0]):
        keys = ("narrow_us_per_rank", "copy_us_per_rank", "persistent_views_us_per_rank",
                "persistent_copy_us_per_rank", "coalesced_reduce_scatter_us_per_rank")
        medians = {key: [run[i][key] for run in runs] for key in keys}
        summary.append({"ranks": row["ranks"],
                        **{key: statistics.median(medians[key]) for key in keys},
                        "process_medians": medians})
        print(f"{row['ranks']} ranks: " +
              ", ".join(f"{key} {summary[-1][key]}" for key in keys), flush=True)
    overall = {key: statistics.median(s[key] for s in summary) for key in keys}
    result = {
        "schema": "loom.deepspeed_list_collective_host/1",
        "what": "per-rank host time of a list collective's Python narrow() loop (microsoft/DeepSpeed "
                "v0.3.14 partition_parameters.py _allgather_param, _reduce_scatter_gradient), of "
                "one index + copy_ per rank (PyTorch ProcessGroupNCCL's copies out of, or into, "
                "its flat buffer), of _allgather_params' loop for a persistent weight, and of "
                "reduce_scatter_coalesced's slicing and concatenation (DeepSpeed 38327e07), on CPU "
                "tensors",
        "environment": environment(torch_version, threads),
        "median_over_group_sizes": overall,
        "summary": summary,
        "processes": runs,
    }
    write_json(OUT, result)


if __name__ == "__main__":
    main()
