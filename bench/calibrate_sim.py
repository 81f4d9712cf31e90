#!/usr/bin/python3
"""Calibrates tteps-ppo-pretrain's simulated job from a short live probe (a fixed-alpha run's
metrics.jsonl): prints the --sim_* flags. Each worker's seconds per micro-batch is the median
of its windows' compute_s / accumulation, scaled to --sim_trips trips; the exchange's own time
per step is the median over windows of the slowest worker's step beyond its compute; the
gradient noise scale is the ratio of the windows' mean gradient_trace and gradient_sq.

    bench/calibrate_sim.py RUN_DIR [--skip 2]     (prints: --sim_compute_s ... --sim_comm_s ...)
"""
import argparse
import json
import os
import statistics
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--skip", type=int, default=2, help="first windows per worker left out")
    args = ap.parse_args()
    windows = {}
    with open(os.path.join(args.run_dir, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if m.get("type") == "train" and "worker" in m:
                windows.setdefault(m["worker"], []).append(m)
    if not windows:
        raise SystemExit(f"calibrate_sim: no train lines in {args.run_dir}")
    per_micro, trips, sq, trace = {}, [], [], []
    for w, ws in sorted(windows.items()):
        ws = ws[args.skip:] or ws
        per_micro[w] = statistics.median(m["compute_s"] / m["accumulation"] for m in ws)
        for m in ws:
            steps = len(m["step_losses"]) or 1
            trips.append(m["trips"] / (steps * m["accumulation"]))
            if m.get("gradient_sq") is not None and m.get("gradient_trace") is not None:
                sq.append(m["gradient_sq"])
                trace.append(m["gradient_trace"])
    # The slowest worker (by compute per step) waits least: its step beyond compute is the
    # exchange's own time.
    slowest = max(windows, key=lambda w: per_micro[w] * windows[w][-1]["accumulation"])
    comm = statistics.median(
        max(0.0, m["window_s"] / max(1, len(m["step_losses"])) - m["compute_s"])
        for m in windows[slowest][args.skip:] or windows[slowest])
    noise = statistics.mean(trace) / statistics.mean(sq) if sq and statistics.mean(sq) > 0 else 0
    if sq and statistics.mean(sq) <= 0 < statistics.mean(trace):
        # Noise measured over a true gradient it did not resolve (as NoiseScaleForDecision
        # reads it): a scale beyond every batch the simulation tries.
        noise = 65536.0
        print("calibrate_sim: the true gradient was not resolved; noise scale taken as 65536",
              file=sys.stderr)
    if noise <= 0:
        raise SystemExit("calibrate_sim: no positive noise scale measured (accumulation >= 2?)")
    # The run's optimizer sets how a step's progress grows with its batch (StepModel).
    with open(os.path.join(args.run_dir, "config.json")) as f:
        opt = json.load(f)["optimizer"]
    model = "adam" if opt["name"] == "adam" and opt["lr_scaling"] == "none" else "scaled"
    print(f"--sim_compute_s {','.join(f'{per_micro[w]:.4f}' for w in sorted(per_micro))} "
          f"--sim_comm_s {comm:.4f} --sim_noise_scale {noise:.1f} "
          f"--sim_trips {statistics.median(trips):.1f} --sim_step_model {model}")


if __name__ == "__main__":
    main()
