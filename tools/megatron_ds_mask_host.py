#!/usr/bin/env python3
"""Measures what Megatron-DeepSpeed's causal attention mask costs the host per micro-batch (issue 43).

From microsoft/Megatron-DeepSpeed a2a476e1 (2023-08-23) until af06d144 (2024-07-08),
megatron/utils.py get_ltor_masks_and_position_ids builds the mask with torch.ones and torch.tril on
the CPU (no device argument), compares it with 0.5 and copies the result to the GPU; pretrain_gpt.py
get_batch calls it for every micro-batch on every pipeline stage unless --use-flash-attn skips the
mask. This times that CPU part (ones, tril, view, < 0.5) for sequence lengths 512-4096 on one
intra-op thread, as under torchrun, which sets OMP_NUM_THREADS=1 for its workers. The copy to the
GPU is not timed here (no GPU).

Needs PyTorch for CPU: Debian's python3-torch (apt-get install python3-torch), run with the system
python3:
    /usr/bin/python3 tools/megatron_ds_mask_host.py [OUTFILE]
It writes OUTFILE (default megatron_ds_mask_host.json): per sequence length the median of 25 timed
builds after 5 untimed ones in each of 5 processes, and the median of those medians, with the machine
and library versions; twice, in two allocator modes:
  reused  glibc keeps freed blocks in its heap (MALLOC_MMAP_THRESHOLD_ 1 GiB, MALLOC_TRIM_THRESHOLD_
          4 GiB), so each build writes pages it has written before: the CPU work of the mask;
  fresh   every block of 64 KiB or more is mapped anew (MALLOC_MMAP_THRESHOLD_ 64 KiB), so each
          build also takes a page fault per 4 KiB page it writes.
Without these settings a process lands in either mode depending on its allocation history (glibc
raises its mmap threshold after freeing a mapped block), 1-4x apart on the machine measured.
"""
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from host_machine import environment, report_rows, run_children, write_json  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--child" else "megatron_ds_mask_host.json"
REPEATS = 5
MODES = {
    "reused": {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 32)},
    "fresh": {"MALLOC_MMAP_THRESHOLD_": str(1 << 16)},
}




def time_mask(torch, seq, warm=5, timed=25):
    samples = []
    for i in range(warm + timed):
        start = time.perf_counter()
        mask = torch.tril(torch.ones((1, seq, seq))).view(1, 1, seq, seq)
        mask = mask < 0.5
        elapsed = time.perf_counter() - start
        del mask
        if i >= warm:
            samples.append(elapsed)
    return samples


def measure():
    """Runs in a child process: prints one JSON list of rows."""
    import torch
    torch.set_num_threads(1)
    rows = []
    for seq in (512, 1024, 2048, 4096):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        samples = time_mask(torch, seq)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        rows.append({
            "seq": seq,
            "median_us": round(statistics.median(samples) * 1e6, 1),
            "min_us": round(min(samples) * 1e6, 1),
            "max_us": round(max(samples) * 1e6, 1),
            "builds": len(samples),
            "page_faults_per_build": round(faults / 30, 1),
        })
    report_rows(rows, torch)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        measure()
        return
    modes = {}
    for mode, env in MODES.items():
        runs, torch_version, threads = run_children(__file__, REPEATS, env)
        # Per sequence length, the median of the processes' medians.
        summary = []
        for i, row in enumerate(runs[0]):
            medians = [run[i]["median_us"] for run in runs]
            summary.append({"seq": row["seq"], "median_us": statistics.median(medians),
                            "process_medians_us": medians})
            print(f"{mode}: seq {row['seq']}: {summary[-1]['median_us']} us "
                  f"(processes: {medians})", flush=True)
        modes[mode] = {"malloc_env": env, "summary": summary, "processes": runs}
    result = {
        "schema": "loom.megatron_ds_mask_host/1",
        "what": "get_ltor_masks_and_position_ids' CPU attention mask (torch.ones, torch.tril, "
                "view, < 0.5) of microsoft/Megatron-DeepSpeed 4822c87e, megatron/utils.py",
        "environment": environment(torch_version, threads),
        "modes": modes,
    }
    write_json(OUT, result)


if __name__ == "__main__":
    main()
