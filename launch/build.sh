#!/usr/bin/env bash
# Installs the dependencies (if missing), configures and builds tteps into build/ (Release).
# Quiet: one line when something was built, nothing when all is up to date; the compiler's
# output (in build/build.log) is shown only when the build fails.
# Usage: launch/build.sh [extra cmake --build args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/launch/install-deps.sh"
jobs=${TTEPS_BUILD_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}
mkdir -p "$root/build"
log="$root/build/build.log"
if ! { cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release &&
  cmake --build "$root/build" -j "$jobs" "$@"; } >"$log" 2>&1; then
  grep -v -e '^\[ *[0-9]*%\] ' -e '^-- ' "$log" >&2 || true
  echo "build: failed; the whole output is in $log" >&2
  exit 1
fi
compiled=$(grep -c -e 'Building CXX' "$log" || true)
linked=$(grep -c -e 'Linking CXX' "$log" || true)
if [ "$compiled" -gt 0 ] || [ "$linked" -gt 0 ]; then
  echo "build: compiled $compiled files, linked $linked targets (output in $log)" >&2
fi
