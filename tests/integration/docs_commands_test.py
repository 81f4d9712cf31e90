#!/usr/bin/python3
"""Every command the README and docs/ quote (their ```sh blocks) names only flags that exist:
a launcher's flags in its script, a program's in its --helpfull, training flags (after `--`) in
tteps-scheduler's or tteps-worker's. And the tasks run as a new user would type them, in a
scratch tree (the programs, launch/, data/ and worker/tools/ linked in; hosts.txt naming two
hosts, trips.jsonl and routes.jsonl cut from the sample; a /data/... path read as the sample):
- launch/main-job.sh runs, and its model is the out/main/model.pt the other pages use;
- the launch/tteps lines (a hostfile's too) run with --dry_run, which checks the configuration;
- the sbatch lines run launch/slurm.sbatch with --dry_run in a pretend allocation of as many
  nodes and tasks as they ask for, by mpirun and by srun;
- the tteps-eval and tteps-predict lines, and the Python predictor's where PyTorch is installed,
  run on that model.
Lines that name a placeholder (CAPS words, `...`), another machine (`tcp://`, --release, netns)
or a GPU are checked for their flags only.
  docs_commands_test.py BIN_DIR SOURCE_DIR"""
import glob
import json
import os
import re
import subprocess
import tempfile
import sys
import time

from check_report import finish

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


def scratch_tree():
    """A tree where the pages' commands run as written: the programs, the scripts, the sample,
    a hostfile of two hosts, trips and routes cut from the sample."""
    d = tempfile.mkdtemp(prefix="tteps-docs-")
    os.makedirs(os.path.join(d, "build"))
    os.symlink(bin_dir, os.path.join(d, "build", "bin"))
    for name in ("launch", "data", "worker", "scheduler", "VERSION"):
        os.symlink(os.path.join(src, name), os.path.join(d, name))
    os.makedirs(os.path.join(d, "fake-bin"))
    with open(os.path.join(d, "fake-bin", "srun"), "w") as f:
        f.write("#!/bin/sh\necho 'srun: not in a test' >&2\nexit 1\n")
    os.chmod(os.path.join(d, "fake-bin", "srun"), 0o755)
    with open(os.path.join(d, "hosts.txt"), "w") as f:
        f.write("node1 slots=4\nnode2 slots=4\n")
    trips = open(SAMPLE).read().splitlines()
    with open(os.path.join(d, "trips.jsonl"), "w") as f:
        f.write("\n".join(trips[:100]) + "\n")
    with open(os.path.join(d, "routes.jsonl"), "w") as f:
        for line in trips[:20]:  # routes: trips before they are driven
            t = json.loads(line)
            t.pop("time"), t.pop("time_gap")
            f.write(json.dumps(t) + "\n")
    return d


SAMPLE = os.path.join(src, "data", "chengdu", "trajectories.jsonl")
# Debian's Python, with python3-torch (install-deps): the one a user's `python3` is.
PYTHON = "/usr/bin/python3"
HAS_TORCH = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
OUTPUT_TO_DATA = re.compile(r"--(out|out_dir|predictions|trace)[= ]/data/")
PLACEHOLDER = re.compile(r"--resume|\.\.\.|\b[A-Z][A-Z0-9_]{2,}\b|tcp://|netns|cuda|--release|"
                         r"--curve_dir|\|")


def runnable(cmd, words):
    if PLACEHOLDER.search(re.sub(r"/data/\S+", "", cmd)) or OUTPUT_TO_DATA.search(cmd):
        return False
    if words[0] in ("launch/tteps", "launch/main-job.sh", "python3"):
        return words[0] != "python3" or words[1] == "worker/tools/tteps_predict.py"
    if words[0] == "sbatch":
        return True
    return words[0] in ("build/bin/tteps-eval", "build/bin/tteps-predict")


def run_as_written(cmd, words):
    """Runs a command (a dry run where it would start a job, mpirun or srun), [] or problems."""
    # A /data/... file read is the sample (an output there is not run: it would write it).
    words = [re.sub(r"^(--\w+=)?/data/\S+$", lambda m: (m.group(1) or "") + SAMPLE, w)
             for w in words]
    env = dict(os.environ, TTEPS_BIN=bin_dir)
    if words[0] == "launch/tteps":
        cut = words.index("--") if "--" in words else len(words)
        words = words[:cut] + ["--dry_run"] + words[cut:]
    elif words[0] == "sbatch":
        words, alloc = slurm_dry_run(words)
        env.update(alloc)
    elif words[0] == "python3":
        if not HAS_TORCH:
            print(f"skipped ({PYTHON} cannot import torch): {cmd}")
            return []
        words = [PYTHON] + words[1:]
    p = subprocess.run(words, cwd=tree, capture_output=True, text=True, env=env, timeout=240)
    if p.returncode != 0:
        return [f"did not run as written ({p.returncode}): {cmd}\n{p.stderr[-800:]}"]
    return []


def slurm_dry_run(words):
    """sbatch [options] launch/slurm.sbatch ARGS: the script's dry run in a pretend allocation
    of the nodes and tasks the options ask for."""
    opts = dict(zip(words[1::2], words[2::2]))
    nodes = int(opts.get("--nodes", 1))
    tasks = int(opts.get("--ntasks", nodes * int(opts.get("--ntasks-per-node", 1))))
    script = words[words.index("launch/slurm.sbatch"):]
    cut = script.index("--") if "--" in script else len(script)
    # srun is only looked for (a dry run starts nothing): the tree's fake one, first on PATH.
    alloc = {"PATH": os.path.join(tree, "fake-bin") + os.pathsep + os.environ["PATH"],
             "SLURM_JOB_ID": "7", "SLURM_NTASKS": str(tasks),
             "SLURM_JOB_NODELIST": ",".join(f"n{i}" for i in range(1, nodes + 1)),
             "SLURM_JOB_CPUS_PER_NODE": f"{-(-tasks // nodes)}(x{nodes})"}
    return script[:cut] + ["--dry_run"] + script[cut:], alloc


def grow_and_shrink():
    """docs/failures.md's walk-through as written: its sync job of 4 slices on 2 workers, the
    scheduler's address from the grep line, two workers started with the join line, then the
    release of one joiner by id; the job ends done with both joins and the release."""
    page = os.path.join(src, "docs", "failures.md")
    cmds = [c for _, c in commands(page)]
    job = next(c for c in cmds
               if c.startswith("launch/tteps") and "--slices" in c and "OUT_DIR" in c)
    grep = next(c for c in cmds if c.startswith("grep") and "scheduler at" in c)
    join = next(c for c in cmds if c.startswith("build/bin/tteps-worker --scheduler"))
    release = next(c for c in cmds if "--release WORKER" in c)
    out = os.path.join(tree, "out", "elastic")
    fill = lambda c, **kw: [kw.get(w, w.replace("OUT_DIR", out)) for w in c.split()]
    env = dict(os.environ, TTEPS_BIN=bin_dir)
    run = lambda words, **kw: subprocess.run(words, cwd=tree, capture_output=True, text=True,
                                             env=env, timeout=60, **kw)
    started = subprocess.Popen(fill(job), cwd=tree, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    metrics = os.path.join(out, "metrics.jsonl")
    lines = lambda: open(metrics).read() if os.path.exists(metrics) else ""
    wait_for(lambda: '"type":"train"' in lines() or started.poll() is not None)
    where = run(["bash", "-c", grep.replace("OUT_DIR", out)]).stdout.strip()
    address = where.replace("scheduler at ", "")
    joiners = [subprocess.Popen(fill(join, **{"tcp://HOST:PORT": address}), cwd=tree, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(2)]
    wait_for(lambda: lines().count('"event":"join"') >= 2 or started.poll() is not None)
    ids = [json.loads(l)["worker"] for l in lines().splitlines() if '"event":"join"' in l]
    answer = run(fill(release, WORKER=str(ids[-1]))) if ids else None
    console = started.communicate(timeout=120)[0]
    for j in joiners:
        j.wait(timeout=60)
    problems = []
    if not address.startswith("tcp://"):
        problems.append(f"{grep}: printed {where!r}")
    if len(ids) < 2:
        problems.append(f"{join}: {len(ids)} of 2 workers joined:\n{console[-1500:]}")
    elif answer.returncode != 0:
        problems.append(f"{release}: exit {answer.returncode}: {answer.stderr}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    events = [m.get("event") for m in summary.get("membership", [])]
    if started.returncode != 0 or summary["status"] != "done" or "release" not in events:
        problems.append(f"{job}: exit {started.returncode}, {summary['status']}, events {events}")
    return [f"docs/failures.md, growing and shrinking: {p}" for p in problems]


def wait_for(done, seconds=60):
    end = time.time() + seconds
    while not done() and time.time() < end:
        time.sleep(0.1)


tree = scratch_tree()
# The main job first: its model is the one the other pages' commands use (out/main/model.pt).
main = subprocess.run(["launch/main-job.sh"], cwd=tree, capture_output=True, text=True,
                      env=dict(os.environ, TTEPS_BIN=bin_dir), timeout=240)
if main.returncode != 0 or not os.path.exists(os.path.join(tree, "out", "main", "model.pt")):
    print(f"FAIL: launch/main-job.sh ({main.returncode}):\n{main.stderr[-2000:]}")
    sys.exit(1)
training = helpfull("tteps-scheduler") | helpfull("tteps-worker")
launcher = script_flags(os.path.join(src, "launch", "tteps"))
problems, checked, ran, done = [], 0, 0, {"launch/main-job.sh"}
for page in pages:
    for n, cmd in commands(page):
        where = f"{os.path.relpath(page, src)}:{n}"
        words = full = cmd.split()
        if words[0] == "sbatch" and "launch/slurm.sbatch" in words:
            words = words[words.index("launch/slurm.sbatch"):]
        if words[0] == "launch/container" and "--" in words:
            # Its own flags, then the command it runs in the image, checked as any other.
            own = script_flags(os.path.join(src, "launch", "container"))
            problems += [f"{where}: launch/container has no flag --{f}: {cmd}"
                         for f in flags(words[1:words.index("--")]) if f not in own]
            words = full = words[words.index("--") + 1:]
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
        elif program == "python3" and len(words) > 1 and words[1].startswith("worker/tools/"):
            known = script_flags(os.path.join(src, words[1]))
            unknown = [f for f in flags(words[2:]) if f not in known]
        else:
            continue  # mpirun, cmake, ctest, sbatch's own: not ours
        checked += 1
        for f in unknown:
            problems.append(f"{where}: {program} has no flag --{f}: {cmd}")
        if runnable(cmd, full) and cmd not in done:  # each command once (the main job ran)
            done.add(cmd)
            ran += 1
            print(f"runs: {where}: {cmd}")
            problems += [f"{where}: {p}" for p in run_as_written(cmd, full)]
problems += grow_and_shrink()
finish(problems, f"{checked} commands in {len(pages)} pages name existing flags; the main job "
       f"and {ran} more ran as written (jobs as dry runs); a job grew by two workers and let one "
       "go as docs/failures.md says", scratch=tree)
