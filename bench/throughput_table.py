#!/usr/bin/python3
"""The table of docs/benchmarks.md ("One process's training step") from the output of two runs
of bench_train_throughput --pytorch, one with --cpu_path avx2 and one with --cpu_path avx512:
per batch size, each path's tteps and PyTorch trips/s (medians of the rounds), their ratio and
tteps' GFLOP/s against the core's sgemm peak.
  bench/throughput_table.py AVX2_OUTPUT AVX512_OUTPUT"""
import json
import statistics
import sys


def medians(path):
    """{(batch, padding): (tteps trips/s, PyTorch trips/s, GFLOP/s, sgemm peak)} of a run."""
    gflops, out = {}, {}
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        key = (r.get("batch_size"), r.get("pad_multiple", 1))
        if r.get("bench") == "train_throughput":
            # Each round's own rate (a step's GFLOP over its time): not GFLOP per step times
            # trips/s over the batch, since a batch larger than what is left of the epoch
            # trains fewer trips.
            gflops.setdefault(key, []).append(r.get("gflops", 0))
        elif r.get("bench") == "train_throughput_median":
            out[key] = (r["trips_per_s"], r.get("pytorch_trips_per_s", 0),
                        statistics.median(gflops.get(key, [0])), r.get("sgemm_peak_gflops", 0))
    return out


def cells(m):
    tteps, torch, gflops, peak = m
    ratio = f"{tteps / torch:.2f}x" if torch else "-"
    share = f" ({100 * gflops / peak:.0f} %)" if peak else ""
    return [f"{tteps:,.0f}", f"{torch:,.0f}", ratio, f"{gflops:.0f}{share}"]


avx2, avx512 = medians(sys.argv[1]), medians(sys.argv[2])
peak2 = next((m[3] for m in avx2.values() if m[3]), 0)
peak5 = next((m[3] for m in avx512.values() if m[3]), 0)
print(f"| batch | AVX2: tteps trips/s | PyTorch | tteps / PyTorch | GFLOP/s (sgemm peak "
      f"{peak2:.0f}) | AVX-512: tteps trips/s | PyTorch | tteps / PyTorch | GFLOP/s (peak "
      f"{peak5:.0f}) |")
print("|---" * 9 + "|")
for key in sorted(set(avx2) & set(avx512)):
    batch, pad = key
    label = f"{batch:,}" + (f" (padded to {pad})" if pad != 1 else "")
    print(f"| {label} | " + " | ".join(cells(avx2[key]) + cells(avx512[key])) + " |")
