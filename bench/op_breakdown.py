#!/usr/bin/env python3
"""Sums a LibTorch profile (bench_train_throughput --trace) per operator.

Prints each operator's self time (its duration less that of the operators it called), its
inclusive time and calls, per step, largest self time first. Self times add up to the traced
time; the profiler's own overhead inflates every figure, small operators the most.
"""
import argparse
import json
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, default=1, help="steps in the trace, to divide by")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    events = [e for e in json.load(open(args.trace)) if e.get("ph") == "X"]
    events.sort(key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    self_us = defaultdict(float)
    incl_us = defaultdict(float)
    calls = defaultdict(int)
    stack = []  # (end, name) of the open events on this thread
    tid = None
    total = 0.0
    for e in events:
        if e["tid"] != tid:
            stack, tid = [], e["tid"]
        while stack and stack[-1][0] <= e["ts"]:
            stack.pop()
        name, dur = e["name"], e["dur"]
        if stack:
            self_us[stack[-1][1]] -= dur
        else:
            total += dur
        self_us[name] += dur
        incl_us[name] += dur
        calls[name] += 1
        stack.append((e["ts"] + dur, name))
    n = args.steps
    print(f"traced: {total / 1e3 / n:.2f} ms per step")
    print(f"{'operator':44} {'self ms':>8} {'share':>6} {'incl ms':>8} {'calls':>7}")
    for name in sorted(self_us, key=lambda k: -self_us[k])[: args.top]:
        print(f"{name[:44]:44} {self_us[name] / 1e3 / n:8.3f} {self_us[name] / total:6.1%} "
              f"{incl_us[name] / 1e3 / n:8.3f} {calls[name] / n:7.1f}")


if __name__ == "__main__":
    main()
