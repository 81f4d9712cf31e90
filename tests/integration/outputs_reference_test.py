#!/usr/bin/python3
"""docs/reference/outputs.md and metrics.md cannot drift from what jobs write: short real jobs
in every mode (sync with checkpoints and a trace, sync with goodput and AdaScale, async with
the PPO agent, SSP, ring, average, local) write summary.json and metrics.jsonl, and every field they
write has its row (a field path, `[]` for an array's objects, `*` for a key that varies); and
every documented field's name is one the sources write (a removed field's row fails too).
  outputs_reference_test.py BIN_DIR SOURCE_DIR"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

from check_report import finish

bin_dir, src = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="tteps-outputs-")
JOBS = {
    "sync": ["--mode", "sync", "--workers", "2", "--servers", "1", "--", "--max_steps", "30",
             "--checkpoint_every", "10", "--eval_every", "10", "--log_every", "5",
             "--trace", os.path.join(work, "sync.trace")],
    "async": ["--mode", "async", "--workers", "2", "--servers", "1", "--", "--max_steps", "40",
              "--eval_every", "20", "--log_every", "5", "--accumulation_policy", "ppo",
              "--ppo_rollout", "2", "--ppo_minibatch", "2", "--ppo_learn"],
    "ssp": ["--mode", "ssp", "--workers", "2", "--servers", "2", "--", "--max_steps", "30",
            "--staleness", "2", "--eval_every", "15", "--log_every", "5"],
    "goodput": ["--mode", "sync", "--workers", "2", "--servers", "1", "--", "--max_steps", "30",
                "--lr_scaling", "adascale", "--worker_series", "1", "--accumulation_policy",
                "goodput", "--accumulation", "2", "--accumulation_min", "2",
                "--accumulation_max", "4", "--log_every", "5", "--eval_every", "10",
                "--patience", "1"],
    "ring": ["--mode", "ring", "--workers", "2", "--", "--max_steps", "30", "--eval_every", "15",
             "--log_every", "5", "--check_every", "10"],
    "average": ["--mode", "average", "--workers", "2", "--", "--max_steps", "30",
                "--eval_every", "15", "--log_every", "5", "--average_every", "5"],
    "local": ["--mode", "local", "--", "--max_steps", "30", "--eval_every", "10",
              "--log_every", "5"],
}


def flat(v, prefix, out):
    """Field paths: a.b for objects, a[] for an array's objects, * for a numeric key."""
    if isinstance(v, dict):
        for k, x in v.items():
            key = "*" if re.fullmatch(r"-?\d+", k) else k
            flat(x, f"{prefix}.{key}" if prefix else key, out)
        if not v and prefix:
            out.add(prefix)
    elif isinstance(v, list) and any(isinstance(x, dict) for x in v):
        for x in v:
            if isinstance(x, dict):
                flat(x, prefix + "[]", out)
    else:
        out.add(prefix)


def documented():
    """{"summary.json": {field}, "metrics.jsonl": {type: {field}}} from the reference's tables."""
    doc = {"summary.json": set(), "metrics.jsonl": {}}
    for page in ("outputs.md", "metrics.md"):
        section = sub = None
        for line in open(os.path.join(src, "docs", "reference", page)):
            if line.startswith("## "):
                section, sub = line[3:].strip(), None
            elif line.startswith("### "):
                sub = line[4:].strip().split()[0].strip("`")
            elif section in doc and re.match(r"\| `[^`]+` \|", line):
                field = re.match(r"\| `([^`]+)` \|", line).group(1)
                if section == "summary.json":
                    doc[section].add(field)
                else:
                    doc[section].setdefault(sub, set()).add(field)
    return doc


def matches(field, names):
    """A field written is documented as itself, or with `*` for one of its keys."""
    return field in names or any(
        re.fullmatch(re.escape(n).replace(r"\*", r"[^.]+"), field) for n in names if "*" in n)


doc = documented()
problems = []
for name, args in JOBS.items():
    out = os.path.join(work, name)
    try:  # each job takes seconds: a hang fails this job, with its output, not the test's time
        p = subprocess.run([os.path.join(src, "launch", "tteps"), *args[:args.index("--")],
                            "--out_dir", out, *args[args.index("--"):]], cwd=work,
                           capture_output=True, text=True,
                           env=dict(os.environ, TTEPS_BIN=bin_dir), timeout=90)
    except subprocess.TimeoutExpired as e:
        problems.append(f"the {name} job did not end within 90 s: {str(e.stderr)[-1000:]}")
        continue
    if p.returncode != 0:
        problems.append(f"the {name} job failed ({p.returncode}): {p.stderr[-1000:]}")
        continue
    fields = set()
    flat(json.load(open(os.path.join(out, "summary.json"))), "", fields)
    # summary.json's membership[] entries are metrics.jsonl's membership records (documented
    # there once).
    events = {"membership[]." + f for f in doc["metrics.jsonl"].get("membership", set())}
    problems += [f"{name}: summary.json's {f} has no row in docs/reference/outputs.md"
                 for f in sorted(fields) if not matches(f, doc["summary.json"] | events)]
    for line in open(os.path.join(out, "metrics.jsonl")):
        record = json.loads(line)
        fields = set()
        flat(record, "", fields)
        rows = doc["metrics.jsonl"].get(record.get("type"), set())
        problems += [f"{name}: metrics.jsonl's {record.get('type')} record's {f} has no row in "
                     "docs/reference/metrics.md" for f in sorted(fields) if not matches(f, rows)]
problems = sorted(set(problems))

# Every documented field's name is written somewhere in the sources.
sources = ""
for path in glob.glob(os.path.join(src, "**", "*.cc"), recursive=True):
    if os.path.relpath(path, src).split(os.sep)[0] in ("common", "server", "worker", "scheduler",
                                                       "model"):
        sources += open(path, errors="replace").read()
names = doc["summary.json"].union(*doc["metrics.jsonl"].values())
for field in sorted(names):
    last = [p.replace("[]", "") for p in field.split(".") if p != "*"][-1]
    if f'"{last}"' not in sources:
        problems.append(f"the reference documents {field}, but no source writes \"{last}\"")

finish(problems, f"{len(JOBS)} jobs' summary.json and metrics.jsonl fields are all documented; "
       f"{len(names)} documented fields all written by the sources", scratch=work)
