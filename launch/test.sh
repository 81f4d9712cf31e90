#!/usr/bin/env bash
# The test command: set-up (dependencies, configure, build), then the whole suite with CTest.
# Extra arguments go to ctest, e.g. launch/test.sh -L unit  or  -R Checkpoint
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/launch/build.sh"
cd "$root/build"
ctest --output-on-failure --timeout 900 -j "${TTEPS_TEST_JOBS:-2}" "$@"
