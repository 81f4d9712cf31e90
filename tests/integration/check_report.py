"""The verdict of the Python checks in this folder, in one form for CTest's log."""
import shutil
import sys


def finish(problems, passed, scratch=None):
    """Prints a FAIL line per problem and exits 1 (keeping `scratch`, a directory to look into),
    or removes `scratch` and prints PASS: `passed`."""
    for p in problems:
        print("FAIL:", p)
    if problems:
        sys.exit(1)
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    print("PASS:", passed)
