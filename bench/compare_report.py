"""Reading runs and writing the report of bench/compare: results rows, the timeline breakdown,
the microbenchmarks, report.md and the plots (matplotlib, Agg backend)."""
import json
import os
import subprocess
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CSV_FIELDS = [
    "kind", "name", "mode", "variant", "workers", "servers", "processes", "exit", "steps", "trips",
    "trips_per_s", "train_s", "wall_s", "compute_ms", "push_ms", "pull_ms", "wait_ms",
    "allreduce_ms", "comm_share", "push_mb", "pull_mb", "staleness_mean", "staleness_max", "mape", "rmse", "mae",
    "peak_rss_worker_mb", "peak_rss_server_mb", "peak_rss_scheduler_mb", "error",
]


def _ms(step_time, key):
    v = step_time.get(key)
    return round(1000 * v, 2) if v is not None else None


def read_summary(out_dir, mode):
    """One run's row fields from its summary.json and metrics.jsonl (tteps or DDP)."""
    with open(os.path.join(out_dir, "summary.json")) as f:
        s = json.load(f)
    if "error" in s:
        raise ValueError(s["error"])
    st = s.get("step_time_s", {})
    row = {
        "steps": s["steps"], "trips": s["trips"], "trips_per_s": round(s["trips_per_s"], 1),
        "train_s": round(s["train_seconds"], 2),
        "compute_ms": _ms(st, "compute"), "push_ms": _ms(st, "push"), "pull_ms": _ms(st, "pull"),
        "wait_ms": _ms(st, "wait"), "allreduce_ms": _ms(st, "allreduce"),
    }
    # The share of a step the training thread spends not computing. In the ring modes the
    # allreduce runs on its own thread beside backward: only the wait for it counts.
    blocking = ("wait_ms",) if mode in ("ring", "average") else ("push_ms", "pull_ms", "wait_ms")
    parts = [row[k] for k in blocking if row[k]]
    if row["compute_ms"]:
        row["comm_share"] = round(sum(parts) / (row["compute_ms"] + sum(parts)), 4)
    sent = s.get("bytes_per_step", {})
    if sent:
        row["push_mb"] = round(sent["push"] / 1e6, 3)
        row["pull_mb"] = round(sent["pull"] / 1e6, 3)
    stale = s.get("server_stats", {}).get("staleness", {})
    if stale:
        row["staleness_mean"] = round(stale["mean"], 3)
        row["staleness_max"] = stale["max"]
    ev = (s.get("final_eval") or {})
    row.update({k: ev.get(k) for k in ("mape", "rmse", "mae")})
    mem = s.get("peak_rss_mb", {})
    if isinstance(mem, dict):
        row["peak_rss_worker_mb"] = round(max(mem.get("workers") or [0]), 1)
        row["peak_rss_server_mb"] = round(max(mem.get("servers") or [0]), 1) or None
        row["peak_rss_scheduler_mb"] = round(mem.get("scheduler", 0), 1) or None
    elif isinstance(mem, list):  # the DDP baseline: one figure per process
        row["peak_rss_worker_mb"] = round(max(mem), 1)
    workers, servers = s.get("workers", 1), s.get("servers", 0)
    row["processes"] = workers + servers + (1 if mode not in ("local", "ddp") else 0)
    row["curve"] = read_curve(os.path.join(out_dir, "metrics.jsonl"))
    return row


def read_curve(path):
    """(training seconds, eval MAPE) of every evaluation in a metrics file."""
    curve = []
    if not os.path.exists(path):
        return curve
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            if m.get("type") != "eval":
                continue
            ev = m["eval"]
            t = m.get("train_s", m.get("wall_s"))
            if t is not None and "mape" in ev:
                curve.append((t, ev["mape"]))
    return curve


def trace_breakdown(path):
    """Seconds per span name per process of a --trace file: {process: {span: seconds}}."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    out = defaultdict(lambda: defaultdict(float))
    for e in events:
        if e.get("ph") == "X":
            out[names.get(e["pid"], str(e["pid"]))][e["name"]] += e["dur"] / 1e6
    return out


def run_micro(root, bin_dir, out):
    """The push/pull and allreduce microbenchmarks; their tables, as printed."""
    env = dict(os.environ, TTEPS_BIN=bin_dir)
    tables = {}
    for name, cmd in (
            ("push/pull (bench_push_pull)", [os.path.join(bin_dir, "bench_push_pull")]),
            ("allreduce, ring vs MPI_Allreduce (bench/allreduce.sh)",
             [os.path.join(root, "bench", "allreduce.sh")])):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
        except subprocess.TimeoutExpired:
            tables[name] = "timed out after 1200 s\n"
            continue
        tables[name] = (p.stdout if p.returncode == 0
                        else f"failed (exit {p.returncode})\n" + p.stderr[-2000:])
        with open(os.path.join(out, "micro.jsonl"), "a") as f:
            f.write(p.stderr)
    return tables


def _fmt(v, digits=1):
    if v is None or v == "":
        return "-"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def _label(r):
    return (r["mode"] + (f" {r['variant']}" if r.get("variant") else "") +
            (f" S={r['servers']}" if r["servers"] else ""))


def median_runs(rows):
    """One row per configuration: its median run by trips/s, with the number of runs and the
    range of their trips/s."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["mode"], r.get("variant", ""), r["workers"], r["servers"])].append(r)
    out = []
    for runs in groups.values():
        runs = sorted(runs, key=lambda r: r["trips_per_s"])
        median = dict(runs[(len(runs) - 1) // 2])
        median.update(runs=len(runs), tps_min=runs[0]["trips_per_s"],
                      tps_max=runs[-1]["trips_per_s"])
        out.append(median)
    return out


def write_report(args, rows, micro, seconds):
    ok = [r for r in rows if r["exit"] == 0 and "error" not in r]
    thr = median_runs([r for r in ok if r["kind"] == "throughput"])
    acc = [r for r in ok if r["kind"] == "accuracy"]
    local = next((r for r in thr if r["mode"] == "local"), None)
    where = (f"across {args.hosts} namespace hosts (launch/netns-hosts), links "
             f"{args.rate or 'unlimited'} both ways; launch/tteps places the scheduler on the "
             f"first host, workers in blocks over the hosts, servers one per worker host (the "
             f"DDP ranks go where the tteps workers go)" if args.hosts else "on one host")
    batch = (f"{args.batch_per_worker} x W" if args.batch_per_worker else "64")
    # The ratios are to DDP as PyTorch runs it (not to its variants, e.g. with tcmalloc).
    ddp = {r["workers"]: r for r in thr if r["mode"] == "ddp" and not r.get("variant")}
    L = [f"# tteps modes against PyTorch DDP\n",
         f"Machine: {os.cpu_count()} cores, shared by all processes of a run (column `procs`: "
         f"scheduler + servers + workers); 1 LibTorch (or PyTorch) thread per process. "
         f"Runs {where}. "
         f"Throughput runs: {args.steps} steps of a global batch of {batch} trips on "
         f"{args.trips} tteps-gen trips; trips/s over the whole run, first step included. "
         f"`comm %`: push + pull + wait as a share of the step (ring: the wait for the "
         f"allreduce, which runs beside backward on its own thread). "
         f"Rounds: {args.repeat} (with more than one, each configuration's median run is shown, "
         f"and the range of its trips/s). Whole benchmark: {seconds / 60:.1f} min.\n"]
    failed = [r for r in rows if r not in ok]
    if failed:
        L.append("**Failed runs:** " + ", ".join(
            f"{r['name']} (exit {r['exit']}: {r.get('error', 'see logs/')})" for r in failed) + "\n")

    L.append("## Throughput\n")
    L.append("| mode | W | procs | trips/s | x local | x DDP | compute ms | push ms | pull ms | "
             "wait ms | allreduce ms (overlapped) | comm % | MB pushed/pulled per step | "
             "staleness mean/max | peak RSS MB worker/server |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(thr, key=lambda r: (r["workers"], r["mode"] == "ddp", r["mode"], r["servers"])):
        x_local = r["trips_per_s"] / local["trips_per_s"] if local else None
        d = ddp.get(r["workers"])
        x_ddp = r["trips_per_s"] / d["trips_per_s"] if d else None
        stale = (f"{r['staleness_mean']:.2f} / {r['staleness_max']}"
                 if r.get("staleness_mean") is not None else "-")
        spread = f" ({r['tps_min']:.0f}–{r['tps_max']:.0f})" if r["runs"] > 1 else ""
        L.append(f"| {_label(r)} | {r['workers']} | {r.get('processes', '-')} | "
                 f"{r['trips_per_s']:.0f}{spread} | {_fmt(x_local, 2)} | {_fmt(x_ddp, 2)} | "
                 f"{_fmt(r.get('compute_ms'))} | {_fmt(r.get('push_ms'))} | "
                 f"{_fmt(r.get('pull_ms'))} | {_fmt(r.get('wait_ms'))} | "
                 f"{_fmt(r.get('allreduce_ms'))} | "
                 f"{_fmt(100 * r['comm_share'] if r.get('comm_share') is not None else None)} | "
                 f"{_fmt(r.get('push_mb'), 2)} / {_fmt(r.get('pull_mb'), 2)} | {stale} | {_fmt(r.get('peak_rss_worker_mb'), 0)} / "
                 f"{_fmt(r.get('peak_rss_server_mb'), 0)} |")
    L.append("\n![throughput](throughput.png) ![step time](step_breakdown.png)\n")

    L.append("## Goals at W = 2\n")
    d2 = ddp.get(2)
    for r in (r for r in thr if r["workers"] == 2 and r["mode"] != "ddp"):
        if d2:
            ratio = r["trips_per_s"] / d2["trips_per_s"]
            L.append(f"- {_label(r)}: {ratio:.2f}x DDP's trips/s "
                     f"({'meets' if ratio >= 1.2 else 'misses'} the 1.2x goal)")
        if r["mode"] == "sync" and r.get("comm_share") is not None:
            L.append(f"- {_label(r)}: push + pull + wait = {100 * r['comm_share']:.1f}% of the step "
                     f"({'meets' if r['comm_share'] < 0.05 else 'misses'} the 5% goal)")

    if args.hosts:
        L.append(f"\n## Sync across {args.hosts} hosts ({args.rate or 'unlimited'} links)\n")
        for w in sorted(ddp):
            sync = [r for r in thr if r["workers"] == w and r["mode"] == "sync"]
            before = next((r for r in sync if r.get("variant") == "dense, server host"), None)
            others = [r for r in thr if r["workers"] == w and r["mode"] == "ddp"
                      and r.get("variant")]
            for r in [r for r in sync if r is not before] + others:
                parts = [f"{_label(r)} W={w}: {r['trips_per_s']:.0f} trips/s"]
                if before:
                    parts.append(f"{r['trips_per_s'] / before['trips_per_s']:.2f}x "
                                 f"{_label(before)} ({before['trips_per_s']:.0f})")
                parts.append(f"{r['trips_per_s'] / ddp[w]['trips_per_s']:.2f}x DDP "
                             f"({ddp[w]['trips_per_s']:.0f})")
                L.append("- " + ", ".join(parts))

    L.append("\n## Where the time goes (timelines)\n")
    L.append("`push part` (buckets pushed during backward) and `pull (forward waits)` (the "
             "forward awaiting modules still arriving) lie inside `compute`.\n")
    for r in (r for r in thr if (r["workers"] == 2 and r["mode"] in ("sync", "ring")
                                 and r["servers"] in (0, 1))
              or (args.hosts and r["mode"] == "sync")):
        path = os.path.join(args.out, "traces", r["name"] + ".json")
        if not os.path.exists(path):
            continue
        L.append(f"`traces/{r['name']}.json` ({_label(r)}; open in ui.perfetto.dev): "
                 "seconds per span\n")
        L.append("| process | " + " | ".join(SPANS) + " |")
        L.append("|---|" + "---|" * len(SPANS))
        for proc, spans in sorted(trace_breakdown(path).items()):
            L.append(f"| {proc} | " + " | ".join(_fmt(spans.get(s), 2) for s in SPANS) + " |")
        L.append("")

    if acc:
        L.append("## Accuracy (shipped sample, tail split: 1,000 train / 200 eval trips)\n")
        L.append("| mode | W | epochs | final MAPE | RMSE (s) | MAE (s) | train s | trips/s |")
        L.append("|---|---|---|---|---|---|---|---|")
        for r in acc:
            L.append(f"| {_label(r)} | {r['workers']} | {args.accuracy_epochs} | "
                     f"{_fmt(r.get('mape'), 4)} | {_fmt(r.get('rmse'))} | {_fmt(r.get('mae'))} | "
                     f"{_fmt(r.get('train_s'))} | {r['trips_per_s']:.0f} |")
        L.append("\n![MAPE against time](mape_vs_time.png)\n")
    if micro:
        L.append("## Microbenchmarks\n")
        for name, table in micro.items():
            L.append(f"### {name}\n\n{table.rstrip()}\n")
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    plot_throughput(args.out, thr)
    plot_breakdown(args.out, [r for r in thr if r["workers"] == 2])
    if acc:
        plot_accuracy(args.out, acc)


SPANS = ["compute", "push part", "pull (forward waits)", "optimizer", "push", "pull", "wait",
         "allreduce", "apply push", "check", "average", "slowdown", "eval"]


def plot_throughput(out, rows):
    labels = sorted({_label(r) for r in rows}, key=lambda l: (l.startswith("ddp"), l))
    ws = sorted({r["workers"] for r in rows})
    fig, ax = plt.subplots(figsize=(10, 5))
    width = 0.8 / max(1, len(labels))
    for i, lab in enumerate(labels):
        ys = [next((r["trips_per_s"] for r in rows if _label(r) == lab and r["workers"] == w), 0)
              for w in ws]
        ax.bar([x + i * width for x in range(len(ws))], ys, width, label=lab)
    ax.set_xticks([x + width * (len(labels) - 1) / 2 for x in range(len(ws))])
    ax.set_xticklabels([f"W = {w}" for w in ws])
    ax.set_ylabel("trips / s")
    ax.set_title("throughput by mode and workers (1 thread per process, 2 cores)")
    ax.legend(ncol=3, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=100)
    plt.close(fig)


def plot_breakdown(out, rows):
    rows = [r for r in rows if r.get("compute_ms") is not None]
    parts = ["compute_ms", "push_ms", "pull_ms", "wait_ms", "allreduce_ms"]
    fig, ax = plt.subplots(figsize=(10, 5))
    bottom = [0.0] * len(rows)
    for p in parts:
        ys = [r.get(p) or 0 for r in rows]
        ax.bar(range(len(rows)), ys, bottom=bottom, label=p.replace("_ms", ""))
        bottom = [b + y for b, y in zip(bottom, ys)]
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([_label(r) for r in rows], rotation=20)
    ax.set_ylabel("ms per step (per worker)")
    ax.set_title("step time at W = 2")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "step_breakdown.png"), dpi=100)
    plt.close(fig)


def plot_accuracy(out, rows):
    fig, ax = plt.subplots(figsize=(9, 5))
    for r in rows:
        if r.get("curve"):
            ax.plot([c[0] for c in r["curve"]], [c[1] for c in r["curve"]], marker=".",
                    label=f"{_label(r)} W={r['workers']}")
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("eval MAPE")
    ax.set_title("eval MAPE against wall time (shipped sample)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "mape_vs_time.png"), dpi=100)
    plt.close(fig)
