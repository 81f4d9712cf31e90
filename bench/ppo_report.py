#!/usr/bin/python3
"""Report of bench/ppo_compare.sh: reads OUT/runs/<case>/<policy>/seed<N>/{summary.json,
metrics.jsonl} and writes OUT/results.csv (one row per run), OUT/report.md (per case and
policy, over seeds, then every case side by side: the table docs/policies.md shows) and plots:
MAPE against training time, and the alphas the agents chose."""
import argparse
import csv
import json
import os
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from compare_report import read_curve  # noqa: E402  (bench/compare_report.py)


def read_run(path):
    """One run's summary, eval curve (train seconds, MAPE) and alpha per worker over time."""
    with open(os.path.join(path, "summary.json")) as f:
        summary = json.load(f)
    curve, alphas, decisions = read_curve(os.path.join(path, "metrics.jsonl")), {}, 0
    with open(os.path.join(path, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if m.get("type") == "train" and "worker" in m:
                alphas.setdefault(m["worker"], []).append(
                    (m["wall_s"], m["accumulation"], m["window_s"]))
            elif m.get("type") == "decision":
                decisions += 1
    return summary, curve, alphas, decisions


def mean_alpha(windows):
    """Time-weighted mean alpha of one worker's metrics windows."""
    total = sum(w for _, _, w in windows)
    return sum(a * w for _, a, w in windows) / total if total else float("nan")


def time_to(curve, target):
    """When the eval MAPE first reached `target`, interpolated linearly between the evaluation
    before (above it) and the first at or below it: evaluations a second or two apart would
    otherwise round every time up to their grid."""
    before = None
    for t, mape in curve:
        if mape <= target:
            if before is None or before[1] <= mape:
                return t
            t0, m0 = before
            return t0 + (t - t0) * (m0 - target) / (m0 - mape)
        before = (t, mape)
    return None


def fmt(values, digits=4):
    """Median (min-max) over seeds."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (f"{statistics.median(values):.{digits}f} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f})")


POLICY_RANK = {"speed": 1, "goodput": 2, "ppo": 3, "ppo-shipped": 4, "ppo-frozen": 5, "ppo-sim": 6}


def policy_order(p):
    # "+plain": --noise_geometry plain; "+ada": --lr_scaling adascale
    base, plain = (p[:-6], 1) if p.endswith("+plain") else (p, 0)
    base, scaled = (base[:-4], 1) if base.endswith("+ada") else (base, 0)
    if base.startswith("fixed-"):
        return (0, int(base.split("-")[1]), scaled, plain, p)
    return (POLICY_RANK.get(base, 7), 0, scaled, plain, p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--target_mape", default="0.28",
                    help="one or more targets, separated by spaces or commas")
    ap.add_argument("--budget_s", type=float, default=45)
    ap.add_argument("--eval_every_s", type=float, default=3)
    ap.add_argument("--data", default="shipped sample (1,000 train / 200 eval trips, tail split)")
    ap.add_argument("--batch_size", type=int, default=64,
                    help="the jobs' --batch_size: the global batch at accumulation 1")
    args = ap.parse_args()
    targets = [float(t) for t in args.target_mape.replace(",", " ").split()]
    runs_dir = os.path.join(args.out, "runs")
    rows = []
    for case in sorted(os.listdir(runs_dir)):
        for policy in sorted(os.listdir(os.path.join(runs_dir, case))):
            pdir = os.path.join(runs_dir, case, policy)
            seeds = [d for d in os.listdir(pdir) if os.path.isdir(os.path.join(pdir, d))]
            for seed in sorted(seeds, key=lambda d: int(d.replace("seed", "") or 0)):
                path = os.path.join(pdir, seed)
                try:
                    summary, curve, alphas, decisions = read_run(path)
                    final = summary["final_eval"]
                    if final is None:
                        raise ValueError("the run had no evaluation trips")
                except (OSError, KeyError, ValueError) as e:
                    print(f"ppo_report: {path} skipped: {e}")
                    continue
                rows.append({
                    "case": case, "policy": policy, "seed": seed.replace("seed", ""),
                    "steps": summary["steps"], "trips": summary["trips"],
                    "train_s": round(summary["train_seconds"], 2),
                    "trips_per_s": round(summary["trips_per_s"], 1),
                    "mape": final["mape"], "rmse": final["rmse"], "mae": final["mae"],
                    **{f"time_to_{t:g}_s": time_to(curve, t) for t in targets},
                    "alphas": " / ".join(f"{mean_alpha(alphas[w]):.2f}" for w in sorted(alphas)),
                    "decisions": decisions,
                    "_curve": curve, "_alphas": alphas,
                })
    fields = [k for k in rows[0] if not k.startswith("_")] if rows else []
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)

    lines = [f"# Accumulation policies: fixed alpha, speed, goodput and PPO\n",
             f"Sync mode, 1 server, {args.data}, global batch {args.batch_size} trips at "
             f"accumulation 1 (`--batch_size`), "
             f"{args.budget_s:g} s training budget per run (`--max_train_s`), evaluation every "
             f"{args.eval_every_s:g} s. Median (min-max) over seeds. Time to a target: "
             f"training seconds until the eval MAPE first reached it, interpolated between "
             f"the evaluations around it (runs that reached it / runs). Mean alpha: time-weighted, per worker (first seed).\n"]
    for case in sorted({r["case"] for r in rows}):
        lines.append(f"\n## Case `{case}`\n")
        to = "".join(f" time to {t:g} (s) |" for t in targets)
        lines.append(f"| policy | runs | final MAPE | RMSE (s) | MAE (s) |{to} "
                     "trips/s | steps | mean alpha per worker |")
        lines.append("|---|---|---|---|---|" + "---|" * len(targets) + "---|---|---|")
        policies = sorted({r["policy"] for r in rows if r["case"] == case}, key=policy_order)
        medians = {}  # (policy, target): median time over the runs that reached it
        for policy in policies:
            rs = [r for r in rows if r["case"] == case and r["policy"] == policy]
            cells = ""
            for t in targets:
                reached = [r[f"time_to_{t:g}_s"] for r in rs if r[f"time_to_{t:g}_s"] is not None]
                if len(reached) == len(rs):
                    medians[policy, t] = statistics.median(reached)
                cells += f" {fmt(reached, 1)} ({len(reached)}/{len(rs)}) |"
            lines.append(
                f"| {policy} | {len(rs)} | {fmt([r['mape'] for r in rs])} | "
                f"{fmt([r['rmse'] for r in rs], 1)} | {fmt([r['mae'] for r in rs], 1)} |{cells} "
                f"{fmt([r['trips_per_s'] for r in rs], 0)} | {fmt([r['steps'] for r in rs], 0)} | "
                f"{rs[0]['alphas']} |")
        # Against the best fixed accumulation: the ratio of median times (every run reached it).
        lines.append("\nMedian time to each target over the best fixed accumulation's "
                     "(below 1: sooner; '-': not every run reached it):\n")
        lines.append("| policy |" + "".join(f" {t:g} |" for t in targets))
        lines.append("|---|" + "---|" * len(targets))
        for policy in (p for p in policies if not p.startswith("fixed-")):
            cells = ""
            for t in targets:
                fixed = [medians[p, t] for p in policies if p.startswith("fixed-") and (p, t) in medians]
                if (policy, t) in medians and fixed and min(fixed) > 0:
                    best = min(fixed)
                    cells += f" {medians[policy, t] / best:.2f} (best fixed {best:.1f} s) |"
                else:
                    cells += " - |"
            lines.append(f"| {policy} |{cells}")
        plot_case(args.out, case, [r for r in rows if r["case"] == case], policy_order)
        lines.append(f"\n![MAPE against time](mape_{case}.png) ![alphas](alpha_{case}.png)\n")
    lines += side_by_side(rows, targets)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def side_by_side(rows, targets):
    """Every case side by side, two tables: per policy and case the median time to each target
    ('-' where not every run reached it), the final MAPE and the trips/s; then each median time
    over the best fixed accumulation's (the one of least median time at that target)."""
    cases = sorted({r["case"] for r in rows})
    policies = sorted({r["policy"] for r in rows}, key=policy_order)
    ts = " / ".join(f"{t:g}" for t in targets)
    median_time = {}  # (case, policy, target): median over the runs, where every run reached it
    for case in cases:
        for policy in policies:
            rs = [r for r in rows if r["case"] == case and r["policy"] == policy]
            for t in targets:
                reached = [r[f"time_to_{t:g}_s"] for r in rs]
                if rs and None not in reached:
                    median_time[case, policy, t] = statistics.median(reached)
    out = ["\n## Every case side by side\n",
           "Median over seeds: time to each target (s; '-': not every run reached it), final "
           "MAPE (min-max), trips/s.\n",
           "| policy |" + "".join(f" {c}: time to {ts} (s) | {c}: final MAPE | {c}: trips/s |"
                                for c in cases),
           "|---|" + "---|---|---|" * len(cases)]
    for policy in policies:
        cells = ""
        for case in cases:
            rs = [r for r in rows if r["case"] == case and r["policy"] == policy]
            if not rs:
                cells += " - | - | - |"
                continue
            times = " / ".join(f"{median_time[case, policy, t]:.1f}"
                               if (case, policy, t) in median_time else "-" for t in targets)
            cells += (f" {times} | {fmt([r['mape'] for r in rs])} | "
                      f"{statistics.median(r['trips_per_s'] for r in rs):.0f} |")
        out.append(f"| {policy} |{cells}")
    out += ["\nMedian time over the best fixed accumulation's at each target (below 1: sooner):\n",
            "| policy |" + "".join(f" {c}: {ts} |" for c in cases),
            "|---|" + "---|" * len(cases)]
    for policy in (p for p in policies if not p.startswith("fixed-")):
        cells = ""
        for case in cases:
            ratios = []
            for t in targets:
                fixed = [v for (c, p, tt), v in median_time.items()
                         if c == case and tt == t and p.startswith("fixed-")]
                mine = median_time.get((case, policy, t))
                ratios.append(f"{mine / min(fixed):.2f}" if mine is not None and fixed and
                              min(fixed) > 0 else "-")
            cells += f" {' / '.join(ratios)} |"
        out.append(f"| {policy} |{cells}")
    return out


def plot_case(out, case, rows, policy_order):
    policies = sorted({r["policy"] for r in rows}, key=policy_order)
    colors = {p: plt.cm.tab10(i % 10) for i, p in enumerate(policies)}
    fig, ax = plt.subplots(figsize=(8, 5))
    for p in policies:
        for i, r in enumerate(r for r in rows if r["policy"] == p):
            t = [c[0] for c in r["_curve"]]
            m = [c[1] for c in r["_curve"]]
            ax.plot(t, m, color=colors[p], alpha=0.8, lw=1.2, label=p if i == 0 else None)
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("eval MAPE")
    ax.set_title(f"eval MAPE against wall time, case '{case}' (one line per seed)")
    ax.set_ylim(top=min(0.6, ax.get_ylim()[1]))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"mape_{case}.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    for p in (p for p in policies if not p.startswith("fixed-")):
        r = next(r for r in rows if r["policy"] == p)  # the first seed
        for w in sorted(r["_alphas"]):
            style = ("-", "--", ":", "-.")[w % 4]
            pts = r["_alphas"][w]
            ax.step([x[0] for x in pts], [x[1] for x in pts], style, where="post",
                    color=colors[p], label=f"{p} worker {w}")
    ax.set_yscale("log", base=2)
    ax.set_xlabel("worker wall time (s)")
    ax.set_ylabel("alpha")
    ax.set_title(f"alpha chosen per worker, case '{case}' (first seed)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"alpha_{case}.png"), dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
