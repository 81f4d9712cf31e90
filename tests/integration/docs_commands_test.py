#!/usr/bin/python3
"""Every command the README and docs/ quote (their ```sh blocks) names only flags that exist:
a launcher's flags in its script, a program's in its --helpfull, training flags (after `--`) in
tteps-scheduler's or tteps-worker's; and the launch/tteps lines that need no other host, file or
placeholder run as written with --dry_run (which also checks the configuration).
  docs_commands_test.py BIN_DIR SOURCE_DIR"""
import glob
import os
import re
import subprocess
import tempfile
import sys

bin_dir, src = sys.argv[1], sys.argv[2]
pages = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))


def commands(path):
    """(line number, command) of every command in the page's ```sh blocks, continuations
    joined, comments dropped."""
    out, block, cur, start = [], False, "", 0
    for n, line in enumerate(open(path), 1):
        if line.startswith("```"):
            block = line.startswith("```sh")
            continue
        if not block:
            continue
        text = "" if line.lstrip().startswith("#") else re.sub(r"\s+#\s.*$", "", line).strip()
        if not cur:
            start = n
        cur = (cur + " " + text).strip()
        if cur.endswith("\\"):
            cur = cur[:-1].strip()
            continue
        if cur:
            out.append((start, cur))
        cur = ""
    return out


def helpfull(program):
    # In a scratch directory: a program that took --helpfull for a path must not write in the tree.
    p = subprocess.run([os.path.join(bin_dir, program), "--helpfull"], capture_output=True,
                       text=True, cwd=tempfile.mkdtemp(prefix="tteps-helpfull-"))
    return set(re.findall(r"^\s+-(\w+) \(", p.stdout + p.stderr, re.M))


def script_flags(path):
    return set(re.findall(r"--([a-z][a-z0-9_]*)", open(path).read()))


def flags(words):
    return [w[2:].split("=")[0] for w in words if re.match(r"^--[a-z]", w)]


training = helpfull("tteps-scheduler") | helpfull("tteps-worker")
launcher = script_flags(os.path.join(src, "launch", "tteps"))
problems, checked, ran = [], 0, 0
for page in pages:
    for n, cmd in commands(page):
        where = f"{os.path.relpath(page, src)}:{n}"
        words = cmd.split()
        if words[0] == "sbatch" and "launch/slurm.sbatch" in words:
            words = words[words.index("launch/slurm.sbatch"):]
        if words[0] == "launch/container" and "--" in words:
            # Its own flags, then the command it runs in the image, checked as any other.
            own = script_flags(os.path.join(src, "launch", "container"))
            problems += [f"{where}: launch/container has no flag --{f}: {cmd}"
                         for f in flags(words[1:words.index("--")]) if f not in own]
            words = words[words.index("--") + 1:]
            cmd = " ".join(words)
        program = words[0]
        before, after = (words[1:words.index("--")], words[words.index("--") + 1:]) \
            if "--" in words else (words[1:], [])
        if program in ("launch/tteps", "launch/slurm.sbatch", "launch/main-job.sh"):
            known = launcher | script_flags(os.path.join(src, program))
            unknown = [f for f in flags(before) if f not in known]
            unknown += [f for f in flags(after) if f not in training]
            if program == "launch/main-job.sh":  # its arguments are training flags
                unknown = [f for f in flags(before) if f not in training]
        elif program.startswith("build/bin/"):
            named = flags(words[1:])
            known = helpfull(os.path.basename(program)) if named else set()
            unknown = [f for f in named if f not in known]
            if not os.access(os.path.join(bin_dir, os.path.basename(program)), os.X_OK):
                unknown = ["(no such program)"]
        elif program.startswith(("bench/", "launch/")):
            known = script_flags(os.path.join(src, program))
            unknown = [f for f in flags(words[1:]) if f not in known]
        else:
            continue  # mpirun, cmake, ctest, sbatch's own: not ours
        checked += 1
        for f in unknown:
            problems.append(f"{where}: {program} has no flag --{f}: {cmd}")
        # The short ones run as written (a dry run: the launcher's checks and the configuration's).
        if program == "launch/tteps" and "--release" not in words and "|" not in cmd and \
                "--hostfile" not in words and not re.search(r"(^| )/data|\.\.\.", cmd) and \
                "--curve_dir" not in words and "cuda" not in cmd:
            line = words[:words.index("--")] + ["--dry_run", "--out_dir", "/tmp/tteps-docs-dry"] + \
                words[words.index("--"):] if "--" in words else words + ["--dry_run"]
            p = subprocess.run(line, cwd=src, capture_output=True, text=True,
                               env=dict(os.environ, TTEPS_BIN=bin_dir))
            ran += 1
            if p.returncode != 0:
                problems.append(f"{where}: did not run as written ({p.returncode}): "
                                f"{cmd}\n{p.stderr[-500:]}")
for p in problems:
    print("FAIL:", p)
if problems:
    sys.exit(1)
print(f"PASS: {checked} commands in {len(pages)} pages name existing flags; {ran} ran (dry run)")
