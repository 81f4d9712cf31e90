#!/usr/bin/python3
"""The manual reads as a manual: README.md and every page under docs/ are at most 300 lines, hold
no commit hash, scratch path or work log (talk of issues, sessions, what was tried), and every
relative link names a page that exists (and, with #anchor, a heading in it).
  docs_manual_test.py SOURCE_DIR"""
import glob
import os
import re
import sys

from check_report import finish

src = sys.argv[1]
pages = [os.path.join(src, "README.md")] + sorted(
    glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True))
MAX_LINES = 300

# A commit hash: 7 to 40 hex digits with at least one letter and one digit, not part of a longer
# word, a 0x literal or a placeholder of x's.
HASH = re.compile(r"(?<![\w./-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
SCRATCH = re.compile(r"(?<![\w.])/tmp/|\.\./shared|/work/|/root/")
WORK_LOG = re.compile(
    r"\b(issue|issues) ?#?\d+|\bsession\b|\btried and not kept\b|\bnot kept\b|\bgit show\b|"
    r"\bwe tried\b|\bthis stop\b|\bnext session\b", re.I)


def anchors(path):
    """GitHub's anchors of a page's headings."""
    out = set()
    for line in open(path):
        m = re.match(r"^#+\s+(.*)", line)
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(a)
    return out


problems = []
for page in pages:
    rel = os.path.relpath(page, src)
    lines = open(page).read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > MAX_LINES:
        problems.append(f"{rel}: {len(lines)} lines, more than {MAX_LINES}")
    fence = False
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = not fence
        for what, pattern in (("a commit hash", HASH), ("a scratch path", SCRATCH),
                              ("a work log", WORK_LOG)):
            m = pattern.search(line)
            if m:
                problems.append(f"{rel}:{n}: {what} ({m.group(0)!r}): {line.strip()[:120]}")
        if fence:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                problems.append(f"{rel}:{n}: a link to {target}, which does not exist")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(f"{rel}:{n}: a link to {target}, a heading not in that page")
finish(problems, f"{len(pages)} pages, each at most {MAX_LINES} lines, no commit hash, scratch "
       "path or work log, every relative link resolves")
