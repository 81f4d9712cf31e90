#!/usr/bin/env python3
"""The critical batch measured from training runs at fixed batches (McCandlish et al. 2018,
section 2.2): to reach a training loss, a run of B trips per step needs S(B) = S_min (1 + B_crit
/ B) steps. Steps to each loss level from the fixed-accumulation runs of a bench/ppo_compare.sh
output, then a least-squares fit of S against 1 / B: S_min the intercept, B_crit the slope over
it. Compare with the gradient noise scale the workers estimate from gradient norms
(`gradient_noise_scale` in the train lines): with Adam the two may differ widely.

  bench/critical_batch.py OUT_DIR [--case even] [--levels 0.25,0.2,0.17,0.15,0.13] [--smooth 5]
"""
import argparse
import glob
import json
import os
import statistics


def steps_to(run, levels, smooth):
    """Per level, the first step at which the mean per-step loss over the workers, averaged over
    `smooth` steps, reached it (None if never); and the trips per step."""
    by_step = {}
    trips = steps = 0
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") != "train" or not r.get("step_losses"):
                continue
            n = len(r["step_losses"])
            for i, loss in enumerate(r["step_losses"]):
                by_step.setdefault(r["step"] - n + 1 + i, []).append(loss)
            trips += r["trips"]
            steps += n
    workers = max((len(v) for v in by_step.values()), default=1)
    curve = [(s, statistics.mean(v)) for s, v in sorted(by_step.items())]
    out = []
    for level in levels:
        hit = None
        for i in range(smooth - 1, len(curve)):
            if statistics.mean(l for _, l in curve[i - smooth + 1:i + 1]) <= level:
                hit = curve[i][0]
                break
        out.append(hit)
    return out, trips / max(steps, 1) * workers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--case", default="even")
    ap.add_argument("--levels", default="0.25,0.2,0.17,0.15,0.13")
    ap.add_argument("--smooth", type=int, default=5)
    args = ap.parse_args()
    levels = [float(x) for x in args.levels.split(",")]
    points = {}  # batch -> per level, the median steps over seeds
    noise = []
    for policy in sorted(glob.glob(os.path.join(args.out, "runs", args.case, "fixed-*"))):
        if "+" in os.path.basename(policy):  # fixed-N+ada: another learning rate
            continue
        runs = sorted(glob.glob(os.path.join(policy, "seed*/")))
        per_run = [steps_to(r, levels, args.smooth) for r in runs]
        if not per_run:
            continue
        batch = statistics.median(b for _, b in per_run)
        points[batch] = [statistics.median(s[i] for s, _ in per_run if s[i] is not None)
                         if all(s[i] is not None for s, _ in per_run) else None
                         for i in range(len(levels))]
        for r in runs:
            with open(os.path.join(r, "metrics.jsonl")) as f:
                noise += [json.loads(l).get("gradient_noise_scale") for l in f
                          if '"type":"train"' in l]
    if len(points) < 2:
        raise SystemExit("critical_batch: need fixed runs at two batches or more")
    print(f"case {args.case}: steps to each training loss (median over seeds) by trips per step")
    print("loss   " + "  ".join(f"B={b:>5.0f}" for b in sorted(points)) + "   S_min   B_crit")
    for i, level in enumerate(levels):
        xs = [(1.0 / b, points[b][i]) for b in sorted(points) if points[b][i] is not None]
        row = "  ".join(f"{points[b][i] if points[b][i] is not None else '-':>7}"
                        for b in sorted(points))
        if len(xs) < 2:
            print(f"{level:<6} {row}")
            continue
        mx = statistics.mean(x for x, _ in xs)
        my = statistics.mean(y for _, y in xs)
        slope = sum((x - mx) * (y - my) for x, y in xs) / sum((x - mx) ** 2 for x, _ in xs)
        s_min = my - slope * mx
        crit = slope / s_min if s_min > 0 else float("nan")
        print(f"{level:<6} {row}   {s_min:6.1f}   {crit:6.0f}")
    finite = [n for n in noise if isinstance(n, (int, float))]
    if finite:
        print(f"gradient_noise_scale of the train lines: median {statistics.median(finite):.1f} "
              f"trips over {len(finite)} windows")


if __name__ == "__main__":
    main()
