#!/usr/bin/python3
"""The reference cannot drift from the code:
- docs/reference/{training,programs,bench-programs,launcher}.md are what docs/reference/generate.py
  makes of the programs' flags now (a flag added, removed or changed without its entry fails);
- docs/reference/environment.md has a row for every TTEPS_* variable the sources read and every
  TTEPS_* CMake option, and no row without one;
- every message of tests/integration/user_messages.tsv (the errors the tests name) is still the
  text its source file writes, and has an entry in docs/troubleshooting.md or docs/errors.md.
  reference_test.py BIN_DIR SOURCE_DIR"""
import os
import re
import subprocess
import sys

from check_report import finish

bin_dir, src = sys.argv[1], sys.argv[2]
problems = []

# 1. The generated pages.
p = subprocess.run([sys.executable, os.path.join(src, "docs", "reference", "generate.py"),
                    bin_dir, src, "--check"], capture_output=True, text=True)
if p.returncode != 0:
    problems.append((p.stdout + p.stderr).replace("FAIL: ", "", 1))

# 2. Environment variables and build options.
SKIP_DIRS = {".git", "build", "out", "bench-out", "docs", "__pycache__", "corpus"}
read, options = {}, set()
for top, dirs, files in os.walk(src):
    dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
    for name in files:
        path = os.path.join(top, name)
        try:
            text = open(path).read()
        except (UnicodeDecodeError, OSError):
            continue
        cmake = name == "CMakeLists.txt" or name.endswith(".cmake")
        found = set(re.findall(r'getenv\("(TTEPS_\w+)"', text))
        found |= set(re.findall(r'environ(?:\.get\(|\[)"(TTEPS_\w+)"', text))
        if cmake:
            options |= set(re.findall(r"set\((TTEPS_\w+)\s[^)]*\bCACHE\b", text))
            options |= set(re.findall(r"option\((TTEPS_\w+)\s", text))
        elif not name.endswith((".cc", ".h", ".py", ".md")):
            found |= set(re.findall(r"\$\{?(TTEPS_\w+)", text))  # shell
        for v in found:
            read.setdefault(v, os.path.relpath(path, src))
env_page = open(os.path.join(src, "docs", "reference", "environment.md")).read()
env_part, _, build_part = env_page.partition("## Build options")
documented = set(re.findall(r"^\| `(TTEPS_\w+)` \|", env_part, re.M))
documented_options = set(re.findall(r"^\| `(TTEPS_\w+)` \|", build_part, re.M))
for v in sorted(set(read) - documented):
    problems.append(f"{read[v]} reads {v}, which docs/reference/environment.md does not list")
for v in sorted(documented - set(read)):
    problems.append(f"docs/reference/environment.md lists {v}, which nothing reads")
for v in sorted(options ^ documented_options):
    problems.append(f"the CMake option {v}: " + ("not in docs/reference/environment.md"
                    if v in options else "listed in docs/reference/environment.md, not in CMake"))

# 3. The messages users meet, each with its entry.
norm = lambda s: re.sub(r"\s+", " ", s.replace("`", ""))
entries = norm(open(os.path.join(src, "docs", "troubleshooting.md")).read() +
               open(os.path.join(src, "docs", "errors.md")).read())
n = 0
for line in open(os.path.join(src, "tests", "integration", "user_messages.tsv")):
    if not line.strip():
        continue
    message, source, _ = line.rstrip("\n").split("\t")
    n += 1
    if message not in open(os.path.join(src, source)).read():
        problems.append(f"{source} no longer writes '{message}' (user_messages.tsv)")
    if norm(message).strip() not in entries:
        problems.append(f"no entry in docs/troubleshooting.md or docs/errors.md for '{message}'")

finish(problems, f"the flag reference is the programs'; {len(read)} variables and "
       f"{len(options)} options documented; {n} messages each with its entry")
