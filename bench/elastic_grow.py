#!/usr/bin/env python3
"""bench/elastic_grow.py: an elastic sync job that grows across pretend hosts.

A sync job with --slices 4 starts with 2 workers (and its server and scheduler) on host
tteps-h1; once it trains, two workers started by hand on host tteps-h2 join it
(`tteps-worker --scheduler tcp://...`) and each takes a slice over. Hosts are network namespaces
joined by links of --rate (launch/netns-hosts; root). Per run it measures the job's trips/s
before the first join and after the second (worker 0's steps over its wall time, times the
global batch), and for each joiner the seconds from its start to its join record (the step from
which its slice's pushes count). Prints one row per run and the medians.

  sudo bench/elastic_grow.py [--runs 3] [--rate 1gbit] [--steps 400] [--batch_size 64]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TTEPS_BIN", os.path.join(ROOT, "build", "bin"))
NETNS = os.path.join(ROOT, "launch", "netns-hosts")


def wait_for(path, pattern, limit_s):
    """The first match of pattern in the file at path within limit_s, else None."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        try:
            with open(path) as f:
                m = re.search(pattern, f.read())
            if m:
                return m
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    return None


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def step_rate(rows, first, last):
    """Worker 0's steps per second between its windows ending at steps first and last."""
    pts = [(r["step"], r["wall_s"]) for r in rows
           if r.get("type") == "train" and r.get("worker") == 0 and first <= r["step"] <= last]
    if len(pts) < 2 or pts[-1][1] <= pts[0][1]:
        return float("nan")
    return (pts[-1][0] - pts[0][0]) / (pts[-1][1] - pts[0][1])


def one_run(args, work, n):
    out = os.path.join(work, f"run{n}")
    hostfile = os.path.join(work, "h1")
    with open("/run/tteps-netns/hostfile") as f:  # its mpirun lines and tteps-h1 only
        lines = [l for l in f if l.startswith("#") or l.startswith("tteps-h1 ")]
    with open(hostfile, "w") as f:
        f.writelines(lines)
    job = subprocess.Popen(
        [os.path.join(ROOT, "launch", "tteps"), "--mode", "sync", "--workers", "2", "--servers",
         "1", "--hostfile", hostfile, "--bind_interface", "eth0", "--out_dir", out, "--",
         "--slices", "4", "--epochs", "1000", "--max_steps", str(args.steps), "--batch_size",
         str(args.batch_size), "--log_every", "1", "--heartbeat_s", "0.5", "--eval_every",
         "100000"], stdout=open(out + ".log", "w"), stderr=subprocess.STDOUT,
        start_new_session=True, env=dict(os.environ, TTEPS_BIN=BIN))
    metrics = os.path.join(out, "metrics.jsonl")
    try:
        if not wait_for(metrics, r'"step":%d,' % args.grow_at, 180):
            sys.exit(f"elastic_grow: run {n} did not reach step {args.grow_at}:\n" +
                     open(out + ".log").read()[-3000:])
        at = wait_for(os.path.join(out, "logs", "scheduler-0.log"), r"scheduler at (tcp://\S+)", 5)
        joiners, started = [], {}
        for name in ("a", "b"):
            started[name] = time.time()
            joiners.append(subprocess.Popen(
                [NETNS, "run", "tteps-h2", os.path.join(BIN, "tteps-worker"),
                 "--scheduler=" + at.group(1), "--bind_interface", "eth0", "--logs",
                 os.path.join(out, "join-" + name)], stdout=open(f"{out}.join-{name}.log", "w"),
                stderr=subprocess.STDOUT))
        seen = {}
        deadline = time.time() + 60
        while len(seen) < 2 and time.time() < deadline:
            for r in records(metrics):
                if r.get("event") == "join" and r["worker"] not in seen:
                    seen[r["worker"]] = time.time()
            time.sleep(0.02)
        if len(seen) < 2:
            sys.exit(f"elastic_grow: run {n}: {len(seen)} of 2 joiners joined in 60 s:\n" +
                     open(f"{out}.join-a.log").read()[-2000:])
        # Joiner ids follow registration order, which is not the start order: pair the two
        # join times with the two starts, first with first.
        join_s = [t - s for t, s in zip(sorted(seen.values()), sorted(started.values()))]
        if job.wait(600) != 0:
            sys.exit(f"elastic_grow: run {n} failed; see {out}.log")
        for j in joiners:
            j.wait(60)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, 9)
    rows = records(metrics)
    joins = [r for r in rows if r.get("event") == "join"]
    first_join = min(r["step"] for r in joins)
    last_join = max(r["step"] for r in joins)
    return {
        "run": n,
        "before": args.batch_size * step_rate(rows, 5, first_join),
        "after": args.batch_size * step_rate(rows, last_join + 5, args.steps),
        "join_s": join_s,
        "joined_at_steps": sorted(r["step"] for r in joins),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rate", default="1gbit")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--grow_at", type=int, default=60, help="step at which the joiners start")
    p.add_argument("--batch_size", type=int, default=64)
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("elastic_grow: needs root (network namespaces); nothing was run")
    subprocess.run([NETNS, "up", "2", "--rate", args.rate], check=True, stdout=subprocess.DEVNULL)
    results = []
    try:
        with tempfile.TemporaryDirectory() as work:
            os.chmod(work, 0o755)
            for n in range(1, args.runs + 1):
                r = one_run(args, work, n)
                results.append(r)
                print(json.dumps(r), flush=True)
    finally:
        subprocess.run([NETNS, "down"])
    med = lambda xs: statistics.median(xs)
    print("| runs | trips/s, 2 workers on 1 host | trips/s, 4 workers on 2 hosts | ratio | "
          "joiner start to its join record, s (median; min-max) |")
    print("| --- | --- | --- | --- | --- |")
    before = med([r["before"] for r in results])
    after = med([r["after"] for r in results])
    join_s = [s for r in results for s in r["join_s"]]
    print(f"| {len(results)} | {before:.0f} | {after:.0f} | {after / before:.2f} | "
          f"{med(join_s):.2f} ({min(join_s):.2f}-{max(join_s):.2f}) |")


if __name__ == "__main__":
    main()
